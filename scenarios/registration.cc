#include "scenarios/registration.h"

#include <algorithm>
#include <regex>

namespace fabric_chaos::scenarios {
namespace {

using core::Status;
using core::StatusCode;
using nlohmann::json;

Status invalid(const std::string& message) { return Status(StatusCode::kInvalidArgument, message); }

// A fabric name becomes a file name under <state-dir>/fabrics: nothing that could leave it.
bool goodName(const std::string& name) {
  static const std::regex kName("[A-Za-z0-9][A-Za-z0-9._-]{0,62}");
  return std::regex_match(name, kName);
}

bool goodInterface(const std::string& name) {
  static const std::regex kInterface("[A-Za-z0-9][A-Za-z0-9._@-]{0,14}");
  return std::regex_match(name, kInterface);
}

}  // namespace

core::Result<AgentRegistration> registrationFromJson(const json& doc) {
  if (!doc.is_object()) return invalid("a registration is a JSON object");
  for (const auto& [key, value] : doc.items()) {
    if (key != "fabric" && key != "host" && key != "agent" && key != "labels" && key != "nics") {
      return invalid(key + ": unknown field");
    }
  }
  AgentRegistration r;
  r.fabric = doc.value("fabric", "registered");
  if (!doc.contains("host") || !doc["host"].is_string()) return invalid("host: required string");
  r.host = doc["host"].get<std::string>();
  if (!doc.contains("agent") || !doc["agent"].is_string()) return invalid("agent: required URL");
  r.agent_url = doc["agent"].get<std::string>();
  if (!goodName(r.fabric)) return invalid("fabric: \"" + r.fabric + "\" is not a name");
  if (!goodName(r.host)) return invalid("host: \"" + r.host + "\" is not a name");
  if (r.agent_url.rfind("https://", 0) != 0 && r.agent_url.rfind("http://", 0) != 0) {
    return invalid("agent: \"" + r.agent_url + "\" is not an http:// or https:// URL");
  }
  if (auto labels = doc.find("labels"); labels != doc.end()) {
    if (!labels->is_object()) return invalid("labels: must be an object of strings");
    for (const auto& [key, value] : labels->items()) {
      if (!value.is_string()) return invalid("labels." + key + ": must be a string");
      r.labels[key] = value.get<std::string>();
    }
  }
  if (auto nics = doc.find("nics"); nics != doc.end()) {
    if (!nics->is_array()) return invalid("nics: must be an array");
    for (size_t i = 0; i < nics->size(); ++i) {
      const json& nic = (*nics)[i];
      const std::string path = "nics[" + std::to_string(i) + "]";
      if (!nic.is_object() || !nic.contains("name") || !nic["name"].is_string()) {
        return invalid(path + ".name: required string");
      }
      if (auto address = nic.find("address"); address != nic.end() && !address->is_string()) {
        return invalid(path + ".address: must be a string");
      }
      Nic out{nic["name"].get<std::string>(), nic.value("address", "")};
      if (!goodInterface(out.name)) return invalid(path + ".name: not an interface name");
      r.nics.push_back(out);
    }
  }
  return r;
}

json toJson(const AgentRegistration& r) {
  json nics = json::array();
  for (const auto& nic : r.nics) nics.push_back({{"name", nic.name}, {"address", nic.address}});
  return {{"fabric", r.fabric},
          {"host", r.host},
          {"agent", r.agent_url},
          {"labels", r.labels},
          {"nics", nics}};
}

core::Result<Fabric> applyRegistration(std::optional<Fabric> existing,
                                       const AgentRegistration& registration,
                                       const std::string& agent_token_file) {
  Fabric fabric;
  if (existing) {
    if (existing->kind != "real") {
      return Status(StatusCode::kFailedPrecondition,
                    "fabric " + existing->name + " is a " + existing->kind +
                        " lab: agents register only into real fabrics");
    }
    fabric = std::move(*existing);
  } else {
    fabric.name = registration.fabric;
    fabric.kind = "real";
  }
  auto host = std::find_if(fabric.hosts.begin(), fabric.hosts.end(),
                           [&](const Host& h) { return h.name == registration.host; });
  const bool known = host != fabric.hosts.end();
  if (!known) {
    fabric.hosts.push_back(Host{});
    host = fabric.hosts.end() - 1;
    host->name = registration.host;
    host->netns = "";
  }
  host->agent = registration.agent_url;
  if (host->agent_token_file.empty()) host->agent_token_file = agent_token_file;
  for (const auto& [key, value] : registration.labels) host->labels[key] = value;
  // Cabling an inventory gave stays; a host with none gets its NICs on the unmapped switch.
  const bool cabled = std::any_of(fabric.links.begin(), fabric.links.end(),
                                  [&](const Link& l) { return l.host == registration.host; });
  if (cabled) return fabric;
  host->nics = registration.nics;
  if (registration.nics.empty()) return fabric;
  auto sw = std::find_if(fabric.switches.begin(), fabric.switches.end(),
                         [](const Switch& s) { return s.name == kUnmappedSwitch; });
  if (sw == fabric.switches.end()) {
    Switch unmapped;
    unmapped.name = kUnmappedSwitch;
    unmapped.labels = {{"role", "unmapped"}};
    fabric.switches.push_back(std::move(unmapped));
    sw = fabric.switches.end() - 1;
  }
  for (const Nic& nic : registration.nics) {
    Link link;
    link.id = registration.host + ":" + nic.name;
    link.host = registration.host;
    link.nic = nic.name;
    link.switch_name = kUnmappedSwitch;
    link.port = link.id;
    sw->ports.push_back(link.port);
    fabric.links.push_back(std::move(link));
  }
  return fabric;
}

}  // namespace fabric_chaos::scenarios
