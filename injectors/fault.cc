#include <string>
#include <utility>

#include "core/json_keys.h"
#include "injectors/injector.h"

namespace fabric_chaos::injectors {
namespace {

core::Status malformed(const std::string& field, const std::string& problem) {
  return core::Status(core::StatusCode::kInvalidArgument, field + ": " + problem);
}

}  // namespace

json toJson(const Fault& fault) {
  return json{{"kind", fault.kind},
              {"target", toJson(fault.target)},
              {"params", fault.params.is_null() ? json::object() : fault.params}};
}

// Strict on purpose: an unknown field is more likely a typo ("parms") than a newer writer, and
// a fault that silently drops its parameters would inject the wrong thing.
core::Result<Fault> faultFromJson(const json& doc) {
  if (!doc.is_object()) return malformed("fault", "must be an object");
  if (auto key = core::firstUnknownKey(doc, {"kind", "target", "params"})) {
    return malformed(*key, "unknown field");
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
  auto decoded = targetFromJson(*target, "target");
  if (!decoded.isOk()) return decoded.status();
  fault.target = std::move(decoded.value());

  auto params = doc.find("params");
  if (params != doc.end() && !params->is_null()) {
    if (!params->is_object()) return malformed("params", "must be an object");
    fault.params = *params;
  }
  return fault;
}

// The whole tagged target, not its lock keys: a traffic set and its mirror image (sources and
// sinks swapped) hold the same interfaces but are different faults.
std::string faultKey(const Fault& fault) { return fault.kind + "/" + toJson(fault.target).dump(); }

std::string describe(const Fault& fault) { return fault.kind + " on " + describe(fault.target); }

}  // namespace fabric_chaos::injectors
