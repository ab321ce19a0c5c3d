#include "scenarios/ib_fabric.h"

#include <algorithm>
#include <set>

#include "scenarios/json_fields.h"

namespace fabric_chaos::scenarios {
namespace {

using core::Status;
using json_fields::checkObject;
using json_fields::child;
using json_fields::element;
using json_fields::find;
using json_fields::invalid;
using json_fields::readRequiredString;
using json_fields::readString;
using nlohmann::json;

Status parseSubnetManager(const json& obj, const std::string& path, SubnetManagerInstance& sm) {
  FC_RETURN_IF_ERROR(checkObject(obj, path, {"name", "host", "priority", "port_guid", "config"}));
  FC_RETURN_IF_ERROR(readRequiredString(obj, path, "name", sm.name));
  FC_RETURN_IF_ERROR(readRequiredString(obj, path, "host", sm.host));
  FC_RETURN_IF_ERROR(readString(obj, path, "port_guid", sm.port_guid));
  FC_RETURN_IF_ERROR(readString(obj, path, "config", sm.config));
  const json* priority = find(obj, "priority");
  if (priority == nullptr || !priority->is_number_integer() || priority->get<int64_t>() < 0 ||
      priority->get<int64_t>() > 15) {
    return invalid(child(path, "priority"), "must be an SM priority, 0 to 15");
  }
  sm.priority = priority->get<int>();
  return Status::ok();
}

Status parseSimulator(const json& obj, const std::string& path, IbSimulator& sim) {
  FC_RETURN_IF_ERROR(checkObject(obj, path, {"netns", "console", "preload", "dir"}));
  FC_RETURN_IF_ERROR(readRequiredString(obj, path, "netns", sim.netns));
  FC_RETURN_IF_ERROR(readRequiredString(obj, path, "console", sim.console));
  FC_RETURN_IF_ERROR(readRequiredString(obj, path, "preload", sim.preload));
  return readRequiredString(obj, path, "dir", sim.dir);
}

}  // namespace

const SubnetManagerInstance* IbFabric::findSubnetManager(const std::string& name) const {
  auto it = std::find_if(subnet_managers.begin(), subnet_managers.end(),
                         [&](const SubnetManagerInstance& sm) { return sm.name == name; });
  return it == subnet_managers.end() ? nullptr : &*it;
}

core::Result<IbFabric> ibFabricFromJson(const json& doc) {
  const std::string path = "ib";
  FC_RETURN_IF_ERROR(checkObject(doc, path, {"subnet_managers", "simulator"}));
  IbFabric ib;
  const json* sms = find(doc, "subnet_managers");
  const std::string sms_path = child(path, "subnet_managers");
  if (sms == nullptr || !sms->is_array()) return invalid(sms_path, "must be an array");
  std::set<std::string> names;
  std::set<std::string> hosts;
  for (size_t i = 0; i < sms->size(); ++i) {
    const std::string p = element(sms_path, i);
    SubnetManagerInstance sm;
    FC_RETURN_IF_ERROR(parseSubnetManager((*sms)[i], p, sm));
    if (!names.insert(sm.name).second) return invalid(child(p, "name"), "duplicate SM " + sm.name);
    if (!hosts.insert(sm.host).second) {
      return invalid(child(p, "host"), "a second SM on host " + sm.host);
    }
    ib.subnet_managers.push_back(std::move(sm));
  }
  if (const json* sim = find(doc, "simulator")) {
    FC_RETURN_IF_ERROR(parseSimulator(*sim, child(path, "simulator"), ib.simulator.emplace()));
  }
  return ib;
}

json toJson(const IbFabric& ib) {
  json sms = json::array();
  for (const SubnetManagerInstance& sm : ib.subnet_managers) {
    sms.push_back({{"name", sm.name}, {"host", sm.host}, {"priority", sm.priority}});
    if (!sm.port_guid.empty()) sms.back()["port_guid"] = sm.port_guid;
    if (!sm.config.empty()) sms.back()["config"] = sm.config;
  }
  json out = {{"subnet_managers", std::move(sms)}};
  if (const auto& sim = ib.simulator) {
    out["simulator"] = {{"netns", sim->netns},
                        {"console", sim->console},
                        {"preload", sim->preload},
                        {"dir", sim->dir}};
  }
  return out;
}

}  // namespace fabric_chaos::scenarios
