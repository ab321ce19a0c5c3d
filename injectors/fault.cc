#include <string>

#include "injectors/injector.h"

namespace fabric_chaos::injectors {
namespace {

core::Status malformed(const std::string& field, const std::string& problem) {
  return core::Status(core::StatusCode::kInvalidArgument, field + ": " + problem);
}

}  // namespace

json toJson(const Fault& fault) {
  return json{{"kind", fault.kind},
              {"target", {{"netns", fault.target.netns}, {"ifname", fault.target.ifname}}},
              {"params", fault.params.is_null() ? json::object() : fault.params}};
}

// Strict on purpose: an unknown field is more likely a typo ("parms") than a newer writer, and
// a fault that silently drops its parameters would inject the wrong thing.
core::Result<Fault> faultFromJson(const json& doc) {
  if (!doc.is_object()) return malformed("fault", "must be an object");
  for (const auto& [key, value] : doc.items()) {
    if (key != "kind" && key != "target" && key != "params") {
      return malformed(key, "unknown field");
    }
  }
  Fault fault;
  auto kind = doc.find("kind");
  if (kind == doc.end()) return malformed("kind", "required");
  if (!kind->is_string() || kind->get_ref<const std::string&>().empty()) {
    return malformed("kind", "must be a non-empty string");
  }
  fault.kind = kind->get<std::string>();

  auto target = doc.find("target");
  if (target == doc.end()) return malformed("target", "required");
  if (!target->is_object()) return malformed("target", "must be an object");
  for (const auto& [key, value] : target->items()) {
    if (key != "netns" && key != "ifname") return malformed("target." + key, "unknown field");
  }
  auto ifname = target->find("ifname");
  if (ifname == target->end()) return malformed("target.ifname", "required");
  if (!ifname->is_string() || ifname->get_ref<const std::string&>().empty()) {
    return malformed("target.ifname", "must be a non-empty string");
  }
  fault.target.ifname = ifname->get<std::string>();
  auto netns = target->find("netns");
  if (netns != target->end()) {
    if (!netns->is_string()) return malformed("target.netns", "must be a string");
    fault.target.netns = netns->get<std::string>();
  }

  auto params = doc.find("params");
  if (params != doc.end() && !params->is_null()) {
    if (!params->is_object()) return malformed("params", "must be an object");
    fault.params = *params;
  }
  return fault;
}

}  // namespace fabric_chaos::injectors
