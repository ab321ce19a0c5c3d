#include "scenarios/topology.h"

#include <algorithm>
#include <set>
#include <string_view>

#include "scenarios/json_fields.h"

namespace fabric_chaos::scenarios {
namespace {

using core::Status;
using core::StatusCode;
using json_fields::checkObject;
using json_fields::checkRoot;
using json_fields::child;
using json_fields::element;
using json_fields::find;
using json_fields::invalid;
using json_fields::readNonEmptyString;
using json_fields::readRequiredString;
using json_fields::readString;
using nlohmann::json;

// An optional array of objects; `parse` reads element i.
template <typename Parse>
Status forEachObject(const json& obj, const std::string& path, std::string_view key, Parse parse) {
  const json* value = find(obj, key);
  if (value == nullptr) return Status::ok();
  if (!value->is_array()) return invalid(child(path, key), "must be an array");
  for (size_t i = 0; i < value->size(); ++i) {
    FC_RETURN_IF_ERROR(parse((*value)[i], element(child(path, key), i)));
  }
  return Status::ok();
}

Status parseLabels(const json& obj, const std::string& path,
                   std::map<std::string, std::string>& out) {
  const json* labels = find(obj, "labels");
  if (labels == nullptr) return Status::ok();
  const std::string labels_path = child(path, "labels");
  if (!labels->is_object()) return invalid(labels_path, "must be an object of strings");
  for (const auto& [key, value] : labels->items()) {
    if (!value.is_string()) return invalid(child(labels_path, key), "must be a string");
    out[key] = value.get<std::string>();
  }
  return Status::ok();
}

Status parseHost(const json& obj, const std::string& path, Host& host) {
  FC_RETURN_IF_ERROR(
      checkObject(obj, path, {"name", "netns", "agent", "agent_token_file", "nics", "labels"}));
  FC_RETURN_IF_ERROR(readRequiredString(obj, path, "name", host.name));
  FC_RETURN_IF_ERROR(readString(obj, path, "netns", host.netns));
  FC_RETURN_IF_ERROR(readString(obj, path, "agent", host.agent));
  FC_RETURN_IF_ERROR(readString(obj, path, "agent_token_file", host.agent_token_file));
  std::set<std::string> nic_names;
  FC_RETURN_IF_ERROR(forEachObject(obj, path, "nics", [&](const json& n, const std::string& p) {
    Nic nic;
    FC_RETURN_IF_ERROR(checkObject(n, p, {"name", "address"}));
    FC_RETURN_IF_ERROR(readRequiredString(n, p, "name", nic.name));
    FC_RETURN_IF_ERROR(readString(n, p, "address", nic.address));
    if (!nic_names.insert(nic.name).second) {
      return invalid(child(p, "name"), "duplicate nic " + nic.name + " on host " + host.name);
    }
    host.nics.push_back(std::move(nic));
    return Status::ok();
  }));
  return parseLabels(obj, path, host.labels);
}

// A positive integer, all of it.
Status readPositive(const json& obj, const std::string& path, std::string_view key, int64_t& out) {
  const json* value = find(obj, key);
  if (value == nullptr) return invalid(child(path, key), "required");
  if (!value->is_number_integer() || value->get<int64_t>() <= 0) {
    return invalid(child(path, key), "must be a positive integer");
  }
  out = value->get<int64_t>();
  return Status::ok();
}

Status parseEgress(const json& obj, const std::string& path, EgressModel& egress) {
  FC_RETURN_IF_ERROR(
      checkObject(obj, path, {"rate_bps", "buffer_bytes", "lossless_dscp", "ecn", "pfc"}));
  FC_RETURN_IF_ERROR(readPositive(obj, path, "rate_bps", egress.rate_bps));
  FC_RETURN_IF_ERROR(readPositive(obj, path, "buffer_bytes", egress.buffer_bytes));
  if (const json* dscp = find(obj, "lossless_dscp")) {
    const std::string dscp_path = child(path, "lossless_dscp");
    if (!dscp->is_array()) return invalid(dscp_path, "must be an array of DSCP values (0-63)");
    for (size_t i = 0; i < dscp->size(); ++i) {
      const json& value = (*dscp)[i];
      if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() > 63) {
        return invalid(element(dscp_path, i), "must be a DSCP value (0-63)");
      }
      egress.lossless_dscp.push_back(value.get<int>());
    }
  }
  if (const json* ecn = find(obj, "ecn")) {
    const std::string ecn_path = child(path, "ecn");
    EcnMarking& marking = egress.ecn.emplace();
    FC_RETURN_IF_ERROR(checkObject(*ecn, ecn_path, {"kmin_bytes", "kmax_bytes", "pmax"}));
    FC_RETURN_IF_ERROR(readPositive(*ecn, ecn_path, "kmin_bytes", marking.kmin_bytes));
    FC_RETURN_IF_ERROR(readPositive(*ecn, ecn_path, "kmax_bytes", marking.kmax_bytes));
    const json* pmax = find(*ecn, "pmax");
    if (pmax == nullptr || !pmax->is_number() || pmax->get<double>() <= 0 ||
        pmax->get<double>() > 1) {
      return invalid(child(ecn_path, "pmax"), "must be a probability in (0, 1]");
    }
    marking.pmax = pmax->get<double>();
  }
  if (const json* pfc = find(obj, "pfc")) {
    const std::string pfc_path = child(path, "pfc");
    FC_RETURN_IF_ERROR(checkObject(*pfc, pfc_path, {"priority", "watchdog"}));
    const json* priority = find(*pfc, "priority");
    if (priority == nullptr || !priority->is_number_integer() || priority->get<int64_t>() < 0 ||
        priority->get<int64_t>() > 7) {
      return invalid(child(pfc_path, "priority"), "must be an 802.1p priority, 0 to 7");
    }
    PfcHonouring& honouring = egress.pfc.emplace();
    honouring.priority = priority->get<int>();
    if (const json* watchdog = find(*pfc, "watchdog")) {
      const std::string wd_path = child(pfc_path, "watchdog");
      FC_RETURN_IF_ERROR(
          checkObject(*watchdog, wd_path, {"action", "detection_ms", "restoration_ms"}));
      PfcWatchdogConfig& config = honouring.watchdog.emplace();
      const json* action = find(*watchdog, "action");
      if (action == nullptr || !action->is_string() ||
          (*action != "drop" && *action != "forward" && *action != "alert")) {
        return invalid(child(wd_path, "action"), "must be \"drop\", \"forward\" or \"alert\"");
      }
      config.action = *action == "drop"      ? PfcWatchdogAction::kDrop
                      : *action == "forward" ? PfcWatchdogAction::kForward
                                             : PfcWatchdogAction::kAlert;
      FC_RETURN_IF_ERROR(readPositive(*watchdog, wd_path, "detection_ms", config.detection_ms));
      FC_RETURN_IF_ERROR(readPositive(*watchdog, wd_path, "restoration_ms", config.restoration_ms));
    }
  }
  return Status::ok();
}

Status parseSwitch(const json& obj, const std::string& path, Switch& sw) {
  FC_RETURN_IF_ERROR(
      checkObject(obj, path, {"name", "netns", "bridge", "ports", "labels", "egress"}));
  FC_RETURN_IF_ERROR(readRequiredString(obj, path, "name", sw.name));
  FC_RETURN_IF_ERROR(readString(obj, path, "netns", sw.netns));
  FC_RETURN_IF_ERROR(readString(obj, path, "bridge", sw.bridge));
  if (const json* ports = find(obj, "ports")) {
    const std::string ports_path = child(path, "ports");
    if (!ports->is_array()) return invalid(ports_path, "must be an array of interface names");
    for (size_t i = 0; i < ports->size(); ++i) {
      std::string port;
      FC_RETURN_IF_ERROR(readNonEmptyString((*ports)[i], element(ports_path, i), port));
      if (std::find(sw.ports.begin(), sw.ports.end(), port) != sw.ports.end()) {
        return invalid(element(ports_path, i), "duplicate port " + port + " on switch " + sw.name);
      }
      sw.ports.push_back(std::move(port));
    }
  }
  if (const json* egress = find(obj, "egress")) {
    FC_RETURN_IF_ERROR(parseEgress(*egress, child(path, "egress"), sw.egress.emplace()));
  }
  return parseLabels(obj, path, sw.labels);
}

Status parseLink(const json& obj, const std::string& path, Link& link) {
  FC_RETURN_IF_ERROR(checkObject(obj, path, {"id", "host", "nic", "switch", "port", "labels"}));
  FC_RETURN_IF_ERROR(readRequiredString(obj, path, "id", link.id));
  FC_RETURN_IF_ERROR(readRequiredString(obj, path, "host", link.host));
  FC_RETURN_IF_ERROR(readRequiredString(obj, path, "nic", link.nic));
  FC_RETURN_IF_ERROR(readRequiredString(obj, path, "switch", link.switch_name));
  FC_RETURN_IF_ERROR(readRequiredString(obj, path, "port", link.port));
  return parseLabels(obj, path, link.labels);
}

Status parseSwitchLink(const json& obj, const std::string& path, SwitchLink& link) {
  FC_RETURN_IF_ERROR(
      checkObject(obj, path, {"id", "switch", "port", "peer_switch", "peer_port", "labels"}));
  FC_RETURN_IF_ERROR(readRequiredString(obj, path, "id", link.id));
  FC_RETURN_IF_ERROR(readRequiredString(obj, path, "switch", link.switch_name));
  FC_RETURN_IF_ERROR(readRequiredString(obj, path, "port", link.port));
  FC_RETURN_IF_ERROR(readRequiredString(obj, path, "peer_switch", link.peer_switch));
  FC_RETURN_IF_ERROR(readRequiredString(obj, path, "peer_port", link.peer_port));
  return parseLabels(obj, path, link.labels);
}

// Who already cables a switch port, or "".
std::string cablingOf(const Fabric& fabric, const std::string& switch_name,
                      const std::string& port) {
  for (const Link& link : fabric.links) {
    if (link.switch_name == switch_name && link.port == port) return link.id;
  }
  for (const SwitchLink& link : fabric.switch_links) {
    if ((link.switch_name == switch_name && link.port == port) ||
        (link.peer_switch == switch_name && link.peer_port == port)) {
      return link.id;
    }
  }
  return "";
}

Status checkSwitchPort(const Fabric& fabric, const std::string& switch_name,
                       const std::string& port, const std::string& switch_path,
                       const std::string& port_path) {
  const Switch* sw = fabric.findSwitch(switch_name);
  if (sw == nullptr) return invalid(switch_path, "unknown switch " + switch_name);
  if (std::find(sw->ports.begin(), sw->ports.end(), port) == sw->ports.end()) {
    return invalid(port_path, "switch " + sw->name + " has no port " + port);
  }
  if (const std::string other = cablingOf(fabric, switch_name, port); !other.empty()) {
    return invalid(port_path, "port " + port + " of switch " + switch_name +
                                  " is already cabled by link " + other);
  }
  return Status::ok();
}

// `fabric` holds every host link and the switch links before this one.
Status checkSwitchLink(const Fabric& fabric, const SwitchLink& link, const std::string& path) {
  if (fabric.findLink(link.id) != nullptr || fabric.findSwitchLink(link.id) != nullptr) {
    return invalid(child(path, "id"), "duplicate link " + link.id);
  }
  if (link.switch_name == link.peer_switch) {
    return invalid(child(path, "peer_switch"), "a link joins two different switches");
  }
  FC_RETURN_IF_ERROR(checkSwitchPort(fabric, link.switch_name, link.port, child(path, "switch"),
                                     child(path, "port")));
  return checkSwitchPort(fabric, link.peer_switch, link.peer_port, child(path, "peer_switch"),
                         child(path, "peer_port"));
}

// References and uniqueness across the whole fabric; `fabric` holds everything before `links`.
Status checkLink(const Fabric& fabric, const Link& link, const std::string& path) {
  const Host* host = fabric.findHost(link.host);
  if (host == nullptr) return invalid(child(path, "host"), "unknown host " + link.host);
  const bool has_nic = std::any_of(host->nics.begin(), host->nics.end(),
                                   [&](const Nic& nic) { return nic.name == link.nic; });
  if (!has_nic)
    return invalid(child(path, "nic"), "host " + host->name + " has no nic " + link.nic);
  for (const Link& other : fabric.links) {
    if (other.id == link.id) return invalid(child(path, "id"), "duplicate link " + link.id);
    if (other.host == link.host && other.nic == link.nic) {
      return invalid(child(path, "nic"), "nic " + link.nic + " of host " + link.host +
                                             " is already cabled by link " + other.id);
    }
  }
  // The switch end as a switch link's ends are checked: it exists and nothing else holds it.
  return checkSwitchPort(fabric, link.switch_name, link.port, child(path, "switch"),
                         child(path, "port"));
}

Status parseFabric(const json& doc, Fabric& fabric) {
  FC_RETURN_IF_ERROR(checkRoot(doc, "fabric",
                               {"name", "kind", "hosts", "switches", "links", "switch_links", "ib",
                                "slurm", "segmentation_offloads"}));
  FC_RETURN_IF_ERROR(readRequiredString(doc, "", "name", fabric.name));
  FC_RETURN_IF_ERROR(readString(doc, "", "kind", fabric.kind));
  if (const json* offloads = find(doc, "segmentation_offloads")) {
    if (!offloads->is_boolean()) return invalid("segmentation_offloads", "must be a boolean");
    fabric.segmentation_offloads = offloads->get<bool>();
  }
  if (find(doc, "hosts") == nullptr) return invalid("hosts", "required");
  FC_RETURN_IF_ERROR(forEachObject(doc, "", "hosts", [&](const json& obj, const std::string& p) {
    Host host;
    FC_RETURN_IF_ERROR(parseHost(obj, p, host));
    if (fabric.findHost(host.name) != nullptr) {
      return invalid(child(p, "name"), "duplicate host " + host.name);
    }
    fabric.hosts.push_back(std::move(host));
    return Status::ok();
  }));
  FC_RETURN_IF_ERROR(forEachObject(doc, "", "switches", [&](const json& obj, const std::string& p) {
    Switch sw;
    FC_RETURN_IF_ERROR(parseSwitch(obj, p, sw));
    if (fabric.findSwitch(sw.name) != nullptr) {
      return invalid(child(p, "name"), "duplicate switch " + sw.name);
    }
    fabric.switches.push_back(std::move(sw));
    return Status::ok();
  }));
  FC_RETURN_IF_ERROR(forEachObject(doc, "", "links", [&](const json& obj, const std::string& p) {
    Link link;
    FC_RETURN_IF_ERROR(parseLink(obj, p, link));
    FC_RETURN_IF_ERROR(checkLink(fabric, link, p));
    fabric.links.push_back(std::move(link));
    return Status::ok();
  }));
  FC_RETURN_IF_ERROR(
      forEachObject(doc, "", "switch_links", [&](const json& obj, const std::string& p) {
        SwitchLink link;
        FC_RETURN_IF_ERROR(parseSwitchLink(obj, p, link));
        FC_RETURN_IF_ERROR(checkSwitchLink(fabric, link, p));
        fabric.switch_links.push_back(std::move(link));
        return Status::ok();
      }));
  if (const json* slurm = find(doc, "slurm")) {
    core::Result<SlurmCluster> parsed = slurmClusterFromJson(*slurm);
    if (!parsed.isOk()) return parsed.status();
    for (const auto& [host, node] : parsed->nodes) {
      if (fabric.findHost(host) == nullptr) {
        return invalid(child("slurm.nodes", host), "no host " + host + " in the fabric");
      }
    }
    fabric.slurm = std::move(*parsed);
  }
  const json* ib = find(doc, "ib");
  if (ib == nullptr) return Status::ok();
  core::Result<IbFabric> parsed = ibFabricFromJson(*ib);
  if (!parsed.isOk()) return parsed.status();
  fabric.ib = std::move(*parsed);
  for (size_t i = 0; i < fabric.ib->subnet_managers.size(); ++i) {
    const SubnetManagerInstance& sm = fabric.ib->subnet_managers[i];
    if (fabric.findHost(sm.host) == nullptr) {
      return invalid(child(element("ib.subnet_managers", i), "host"),
                     "no host " + sm.host + " in the fabric");
    }
  }
  return Status::ok();
}

Status unprocessable(const std::string& message) {
  return Status(StatusCode::kUnprocessable, message);
}

const Link* firstLink(const Fabric& fabric, const std::string& host) {
  for (const Link& link : fabric.links) {
    if (link.host == host) return &link;
  }
  return nullptr;
}

// A real fabric's switches belong to the network, not to a namespace of ours: a port name there
// is not an interface any agent may touch (on the controller it could be its own NIC).
Status realSwitchRefusal(const Fabric& fabric, const std::string& link_id) {
  return unprocessable("fabric " + fabric.name +
                       " is a real fabric: its switch ports are not driven by fabric-chaos; "
                       "target the host end of link " +
                       link_id + " (side \"host\"), where its host's agent acts");
}

core::Result<ResolvedTarget> endpoint(const Fabric& fabric, const Link& link, LinkSide side) {
  ResolvedTarget target;
  target.host = link.host;
  target.link_id = link.id;
  target.side = side;
  if (side == LinkSide::kPeer) {
    return unprocessable("side \"peer\" is the far switch of a link between two switches; link " +
                         link.id + " joins host " + link.host + " to switch " + link.switch_name);
  }
  if (side == LinkSide::kHost) {
    const Host* host = fabric.findHost(link.host);
    if (host == nullptr) {
      return unprocessable("link " + link.id + " names host " + link.host +
                           ", which is not in fabric " + fabric.name);
    }
    target.target = injectors::InterfaceTarget{host->netns, link.nic};
  } else {
    if (fabric.kind == "real") return realSwitchRefusal(fabric, link.id);
    const Switch* sw = fabric.findSwitch(link.switch_name);
    if (sw == nullptr) {
      return unprocessable("link " + link.id + " names switch " + link.switch_name +
                           ", which is not in fabric " + fabric.name);
    }
    target.target = injectors::InterfaceTarget{sw->netns, link.port};
  }
  return target;
}

core::Result<ResolvedTarget> endpoint(const Fabric& fabric, const SwitchLink& link, LinkSide side) {
  if (side == LinkSide::kHost) {
    return unprocessable("link " + link.id + " joins switches " + link.switch_name + " and " +
                         link.peer_switch +
                         ": it has no host side (use side \"switch\" or \"peer\")");
  }
  if (fabric.kind == "real") return realSwitchRefusal(fabric, link.id);
  const std::string& switch_name = side == LinkSide::kPeer ? link.peer_switch : link.switch_name;
  const Switch* sw = fabric.findSwitch(switch_name);
  if (sw == nullptr) {
    return unprocessable("link " + link.id + " names switch " + switch_name +
                         ", which is not in fabric " + fabric.name);
  }
  ResolvedTarget target;
  target.link_id = link.id;
  target.side = side;
  target.target =
      injectors::InterfaceTarget{sw->netns, side == LinkSide::kPeer ? link.peer_port : link.port};
  return target;
}

bool containsLabels(const std::map<std::string, std::string>& have,
                    const std::map<std::string, std::string>& wanted) {
  return std::all_of(wanted.begin(), wanted.end(), [&](const auto& pair) {
    auto it = have.find(pair.first);
    return it != have.end() && it->second == pair.second;
  });
}

// A host link's labels as a selector sees them: its own over its host's.
std::map<std::string, std::string> effectiveLabels(const Host& host, const Link& link) {
  std::map<std::string, std::string> labels = link.labels;
  labels.insert(host.labels.begin(), host.labels.end());  // keeps the link's value on a clash
  return labels;
}

}  // namespace

const Host* Fabric::findHost(const std::string& name) const {
  auto it = std::find_if(hosts.begin(), hosts.end(), [&](const Host& h) { return h.name == name; });
  return it == hosts.end() ? nullptr : &*it;
}

const Switch* Fabric::findSwitch(const std::string& name) const {
  auto it = std::find_if(switches.begin(), switches.end(),
                         [&](const Switch& s) { return s.name == name; });
  return it == switches.end() ? nullptr : &*it;
}

const Link* Fabric::findLink(const std::string& id) const {
  auto it = std::find_if(links.begin(), links.end(), [&](const Link& l) { return l.id == id; });
  return it == links.end() ? nullptr : &*it;
}

const SwitchLink* Fabric::findSwitchLink(const std::string& id) const {
  auto it = std::find_if(switch_links.begin(), switch_links.end(),
                         [&](const SwitchLink& l) { return l.id == id; });
  return it == switch_links.end() ? nullptr : &*it;
}

core::Result<Fabric> fabricFromJson(const nlohmann::json& doc) {
  Fabric fabric;
  FC_RETURN_IF_ERROR(parseFabric(doc, fabric));
  return fabric;
}

nlohmann::json toJson(const Fabric& fabric) {
  json hosts = json::array();
  for (const Host& host : fabric.hosts) {
    json nics = json::array();
    for (const Nic& nic : host.nics) nics.push_back({{"name", nic.name}, {"address", nic.address}});
    hosts.push_back({{"name", host.name},
                     {"netns", host.netns},
                     {"agent", host.agent},
                     {"nics", std::move(nics)},
                     {"labels", host.labels}});
    if (!host.agent_token_file.empty()) hosts.back()["agent_token_file"] = host.agent_token_file;
  }
  json switches = json::array();
  for (const Switch& sw : fabric.switches) {
    switches.push_back({{"name", sw.name},
                        {"netns", sw.netns},
                        {"bridge", sw.bridge},
                        {"ports", sw.ports},
                        {"labels", sw.labels}});
    if (sw.egress) {
      switches.back()["egress"] = {{"rate_bps", sw.egress->rate_bps},
                                   {"buffer_bytes", sw.egress->buffer_bytes},
                                   {"lossless_dscp", sw.egress->lossless_dscp}};
      if (const auto& ecn = sw.egress->ecn) {
        switches.back()["egress"]["ecn"] = {
            {"kmin_bytes", ecn->kmin_bytes}, {"kmax_bytes", ecn->kmax_bytes}, {"pmax", ecn->pmax}};
      }
      if (const auto& pfc = sw.egress->pfc) {
        switches.back()["egress"]["pfc"] = {{"priority", pfc->priority}};
        if (const auto& wd = pfc->watchdog) {
          const char* action = wd->action == PfcWatchdogAction::kDrop      ? "drop"
                               : wd->action == PfcWatchdogAction::kForward ? "forward"
                                                                           : "alert";
          switches.back()["egress"]["pfc"]["watchdog"] = {{"action", action},
                                                          {"detection_ms", wd->detection_ms},
                                                          {"restoration_ms", wd->restoration_ms}};
        }
      }
    }
  }
  json links = json::array();
  for (const Link& link : fabric.links) {
    links.push_back({{"id", link.id},
                     {"host", link.host},
                     {"nic", link.nic},
                     {"switch", link.switch_name},
                     {"port", link.port}});
    if (!link.labels.empty()) links.back()["labels"] = link.labels;
  }
  json out = {{"name", fabric.name},
              {"kind", fabric.kind},
              {"hosts", std::move(hosts)},
              {"switches", std::move(switches)},
              {"links", std::move(links)}};
  if (!fabric.switch_links.empty()) {
    json switch_links = json::array();
    for (const SwitchLink& link : fabric.switch_links) {
      switch_links.push_back({{"id", link.id},
                              {"switch", link.switch_name},
                              {"port", link.port},
                              {"peer_switch", link.peer_switch},
                              {"peer_port", link.peer_port},
                              {"labels", link.labels}});
    }
    out["switch_links"] = std::move(switch_links);
  }
  if (fabric.ib) out["ib"] = toJson(*fabric.ib);
  if (fabric.slurm) out["slurm"] = toJson(*fabric.slurm);
  if (fabric.segmentation_offloads) out["segmentation_offloads"] = true;
  return out;
}

core::Result<std::vector<ResolvedTarget>> resolveTargets(const TargetSelector& selector,
                                                         const Fabric& fabric) {
  if (!selector.sm.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "sm: a subnet manager is a target of sm_failover only, not of a link's fault");
  }
  const int set = !selector.host.empty() + !selector.link.empty() + !selector.labels.empty();
  if (set != 1) {
    return Status(StatusCode::kInvalidArgument,
                  "a target must set exactly one of host, link, labels");
  }
  const std::string what = "target " + selector.describe();
  std::vector<ResolvedTarget> out;
  auto add = [&](const auto& link) -> Status {
    auto target = endpoint(fabric, link, selector.side);
    if (!target.isOk()) return target.status().withContext(what);
    out.push_back(std::move(target.value()));
    return Status::ok();
  };

  if (!selector.host.empty()) {
    if (fabric.findHost(selector.host) == nullptr) {
      return unprocessable(what + " is not in fabric " + fabric.name);
    }
    const Link* link = firstLink(fabric, selector.host);
    if (link == nullptr) {
      return unprocessable(what + " has no link in fabric " + fabric.name);
    }
    FC_RETURN_IF_ERROR(add(*link));
  } else if (!selector.link.empty()) {
    if (const Link* link = fabric.findLink(selector.link)) {
      FC_RETURN_IF_ERROR(add(*link));
    } else if (const SwitchLink* switch_link = fabric.findSwitchLink(selector.link)) {
      FC_RETURN_IF_ERROR(add(*switch_link));
    } else {
      return unprocessable(what + " is not in fabric " + fabric.name);
    }
  } else {
    for (const Host& host : fabric.hosts) {
      bool host_matched = containsLabels(host.labels, selector.labels);
      bool host_has_link = false;
      for (const Link& link : fabric.links) {
        if (link.host != host.name) continue;
        host_has_link = true;
        if (!containsLabels(effectiveLabels(host, link), selector.labels)) continue;
        host_matched = true;
        FC_RETURN_IF_ERROR(add(link));
      }
      if (host_matched && !host_has_link) {
        return unprocessable(what + " matches host " + host.name +
                             ", which has no link in fabric " + fabric.name);
      }
    }
    for (const SwitchLink& link : fabric.switch_links) {
      if (containsLabels(link.labels, selector.labels)) FC_RETURN_IF_ERROR(add(link));
    }
    if (out.empty()) return unprocessable(what + " matches no link in fabric " + fabric.name);
  }
  return out;
}

}  // namespace fabric_chaos::scenarios
