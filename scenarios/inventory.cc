#include "scenarios/inventory.h"

#include <algorithm>
#include <regex>
#include <set>

namespace fabric_chaos::scenarios {
namespace {

using core::Status;
using core::StatusCode;
using nlohmann::json;

Status invalid(const std::string& path, const std::string& message) {
  return Status(StatusCode::kInvalidArgument, path + ": " + message);
}

// Names become link ids and label values: keep them to what selectors and files can carry.
bool goodName(const std::string& name) {
  static const std::regex kName("[A-Za-z0-9][A-Za-z0-9._:-]{0,62}");
  return std::regex_match(name, kName);
}

core::Result<std::string> stringField(const json& obj, const std::string& path,
                                      const std::string& key, bool required,
                                      const std::string& fallback = "") {
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) return invalid(path + "." + key, "required");
    return fallback;
  }
  if (!it->is_string()) return invalid(path + "." + key, "must be a string");
  return it->get<std::string>();
}

core::Result<std::map<std::string, std::string>> labelsField(const json& obj,
                                                             const std::string& path) {
  std::map<std::string, std::string> labels;
  auto it = obj.find("labels");
  if (it == obj.end()) return labels;
  if (!it->is_object()) return invalid(path + ".labels", "must be an object of strings");
  for (const auto& [key, value] : it->items()) {
    if (!value.is_string()) return invalid(path + ".labels." + key, "must be a string");
    labels[key] = value.get<std::string>();
  }
  return labels;
}

Status checkKeys(const json& obj, const std::string& path, const std::set<std::string>& known) {
  if (!obj.is_object()) return invalid(path, "must be an object");
  for (const auto& [key, value] : obj.items()) {
    if (known.count(key) == 0) return invalid(path + "." + key, "unknown field");
  }
  return Status::ok();
}

struct AgentDefaults {
  std::string scheme = "https";
  int port = 7100;
  std::string token_file = "/etc/fabric-chaos/agent.token";
};

core::Result<AgentDefaults> agentDefaults(const json& inventory) {
  AgentDefaults defaults;
  auto it = inventory.find("agent");
  if (it == inventory.end()) return defaults;
  FC_RETURN_IF_ERROR(checkKeys(*it, "agent", {"scheme", "port", "token_file"}));
  FC_ASSIGN_OR_RETURN(defaults.scheme, stringField(*it, "agent", "scheme", false, "https"));
  if (defaults.scheme != "https" && defaults.scheme != "http") {
    return invalid("agent.scheme", "must be \"https\" or \"http\"");
  }
  if (auto port = it->find("port"); port != it->end()) {
    if (!port->is_number_integer() || *port < 1 || *port > 65535) {
      return invalid("agent.port", "must be a port number 1-65535");
    }
    defaults.port = port->get<int>();
  }
  FC_ASSIGN_OR_RETURN(defaults.token_file,
                      stringField(*it, "agent", "token_file", false, defaults.token_file));
  return defaults;
}

std::string urlHost(const std::string& address) {
  return address.find(':') != std::string::npos ? "[" + address + "]" : address;
}

}  // namespace

core::Result<Fabric> fabricFromInventory(const json& inventory) {
  FC_RETURN_IF_ERROR(
      checkKeys(inventory, "inventory", {"name", "agent", "spines", "leaves", "hosts", "labels"}));
  Fabric fabric;
  fabric.kind = "real";
  FC_ASSIGN_OR_RETURN(fabric.name, stringField(inventory, "inventory", "name", true));
  if (!goodName(fabric.name)) return invalid("name", "\"" + fabric.name + "\" is not a name");
  FC_ASSIGN_OR_RETURN(const AgentDefaults agent, agentDefaults(inventory));
  FC_ASSIGN_OR_RETURN(const auto fabric_labels, labelsField(inventory, "inventory"));

  std::set<std::string> names;  // hosts and switches share one namespace of names
  auto claim = [&](const std::string& name, const std::string& path) -> Status {
    if (!goodName(name)) return invalid(path, "\"" + name + "\" is not a name");
    if (!names.insert(name).second) return invalid(path, "\"" + name + "\" is named twice");
    return Status::ok();
  };

  // Spines: names (or objects with labels).
  const json spines = inventory.value("spines", json::array());
  if (!spines.is_array()) return invalid("spines", "must be an array");
  for (size_t i = 0; i < spines.size(); ++i) {
    const std::string path = "spines[" + std::to_string(i) + "]";
    Switch sw;
    if (spines[i].is_string()) {
      sw.name = spines[i].get<std::string>();
    } else {
      FC_RETURN_IF_ERROR(checkKeys(spines[i], path, {"name", "labels"}));
      FC_ASSIGN_OR_RETURN(sw.name, stringField(spines[i], path, "name", true));
      FC_ASSIGN_OR_RETURN(sw.labels, labelsField(spines[i], path));
    }
    FC_RETURN_IF_ERROR(claim(sw.name, path + ".name"));
    sw.labels["role"] = "spine";
    sw.labels["spine"] = sw.name;
    fabric.switches.push_back(std::move(sw));
  }
  const size_t spine_count = fabric.switches.size();

  // Leaves: name, labels, uplinks [{port, spine, spine_port}].
  const json leaves = inventory.value("leaves", json::array());
  if (!leaves.is_array()) return invalid("leaves", "must be an array");
  for (size_t i = 0; i < leaves.size(); ++i) {
    const std::string path = "leaves[" + std::to_string(i) + "]";
    FC_RETURN_IF_ERROR(checkKeys(leaves[i], path, {"name", "labels", "uplinks"}));
    Switch sw;
    FC_ASSIGN_OR_RETURN(sw.name, stringField(leaves[i], path, "name", true));
    FC_RETURN_IF_ERROR(claim(sw.name, path + ".name"));
    FC_ASSIGN_OR_RETURN(sw.labels, labelsField(leaves[i], path));
    sw.labels["role"] = "leaf";
    sw.labels["leaf"] = sw.name;
    const json uplinks = leaves[i].value("uplinks", json::array());
    if (!uplinks.is_array()) return invalid(path + ".uplinks", "must be an array");
    for (size_t u = 0; u < uplinks.size(); ++u) {
      const std::string upath = path + ".uplinks[" + std::to_string(u) + "]";
      FC_RETURN_IF_ERROR(checkKeys(uplinks[u], upath, {"port", "spine", "spine_port"}));
      SwitchLink link;
      link.switch_name = sw.name;
      FC_ASSIGN_OR_RETURN(link.port, stringField(uplinks[u], upath, "port", true));
      FC_ASSIGN_OR_RETURN(link.peer_switch, stringField(uplinks[u], upath, "spine", true));
      FC_ASSIGN_OR_RETURN(link.peer_port, stringField(uplinks[u], upath, "spine_port", true));
      auto spine = std::find_if(fabric.switches.begin(),
                                fabric.switches.begin() + static_cast<long>(spine_count),
                                [&](const Switch& s) { return s.name == link.peer_switch; });
      if (spine == fabric.switches.begin() + static_cast<long>(spine_count)) {
        return invalid(upath + ".spine", "no spine \"" + link.peer_switch + "\"");
      }
      link.id = sw.name + ":" + link.port + "-" + link.peer_switch + ":" + link.peer_port;
      link.labels = {{"tier", "uplink"}, {"leaf", sw.name}, {"spine", link.peer_switch}};
      sw.ports.push_back(link.port);
      spine->ports.push_back(link.peer_port);
      fabric.switch_links.push_back(std::move(link));
    }
    fabric.switches.push_back(std::move(sw));
  }

  // Hosts: name, address (management, for the agent URL), labels, nics [{name, address, rail,
  // leaf, port}].
  const json hosts = inventory.value("hosts", json::array());
  if (!hosts.is_array() || hosts.empty()) return invalid("hosts", "must be a non-empty array");
  std::set<std::string> leaf_ports;
  for (size_t i = 0; i < hosts.size(); ++i) {
    const std::string path = "hosts[" + std::to_string(i) + "]";
    FC_RETURN_IF_ERROR(checkKeys(hosts[i], path, {"name", "address", "agent", "labels", "nics"}));
    Host host;
    host.netns = "";
    FC_ASSIGN_OR_RETURN(host.name, stringField(hosts[i], path, "name", true));
    FC_RETURN_IF_ERROR(claim(host.name, path + ".name"));
    FC_ASSIGN_OR_RETURN(const std::string address, stringField(hosts[i], path, "address", true));
    FC_ASSIGN_OR_RETURN(host.agent, stringField(hosts[i], path, "agent", false,
                                                agent.scheme + "://" + urlHost(address) + ":" +
                                                    std::to_string(agent.port)));
    host.agent_token_file = agent.token_file;
    FC_ASSIGN_OR_RETURN(host.labels, labelsField(hosts[i], path));
    for (const auto& [key, value] : fabric_labels) host.labels.emplace(key, value);
    const json nics = hosts[i].value("nics", json::array());
    if (!nics.is_array() || nics.empty()) {
      return invalid(path + ".nics", "must be a non-empty array (the host's fabric NICs)");
    }
    for (size_t n = 0; n < nics.size(); ++n) {
      const std::string npath = path + ".nics[" + std::to_string(n) + "]";
      FC_RETURN_IF_ERROR(checkKeys(nics[n], npath, {"name", "address", "rail", "leaf", "port"}));
      Nic nic;
      FC_ASSIGN_OR_RETURN(nic.name, stringField(nics[n], npath, "name", true));
      FC_ASSIGN_OR_RETURN(nic.address, stringField(nics[n], npath, "address", false));
      host.nics.push_back(nic);
      FC_ASSIGN_OR_RETURN(const std::string leaf, stringField(nics[n], npath, "leaf", false));
      if (leaf.empty()) continue;  // a NIC the inventory does not cable
      auto sw =
          std::find_if(fabric.switches.begin() + static_cast<long>(spine_count),
                       fabric.switches.end(), [&](const Switch& s) { return s.name == leaf; });
      if (sw == fabric.switches.end()) return invalid(npath + ".leaf", "no leaf \"" + leaf + "\"");
      Link link;
      link.host = host.name;
      link.nic = nic.name;
      link.switch_name = leaf;
      FC_ASSIGN_OR_RETURN(link.port, stringField(nics[n], npath, "port", true));
      if (!leaf_ports.insert(leaf + ":" + link.port).second ||
          std::find(sw->ports.begin(), sw->ports.end(), link.port) != sw->ports.end()) {
        return invalid(npath + ".port",
                       "port " + link.port + " of leaf " + leaf + " is cabled twice");
      }
      sw->ports.push_back(link.port);
      link.id = host.name + ":" + nic.name;
      // As the leaf-spine lab labels its links (lab/leaf_spine.cc): tier access or uplink.
      link.labels["tier"] = "access";
      link.labels["leaf"] = leaf;
      if (auto rail = nics[n].find("rail"); rail != nics[n].end()) {
        if (!rail->is_number_integer() || *rail < 0) {
          return invalid(npath + ".rail", "must be a rail number >= 0");
        }
        link.labels["rail"] = std::to_string(rail->get<int>());
      }
      fabric.links.push_back(std::move(link));
    }
    fabric.hosts.push_back(std::move(host));
  }
  return fabric;
}

}  // namespace fabric_chaos::scenarios
