#include "lab/ib_lab_plan.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>

namespace fabric_chaos::lab {
namespace {

using core::Status;
using core::StatusCode;
using scenarios::Fabric;
using scenarios::SubnetManagerInstance;

constexpr int kTopPriority = 14;  // 15 stays free for an operator's own SM to win

Status invalid(const std::string& why) { return Status(StatusCode::kInvalidArgument, why); }

bool plainName(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

std::string hexGuid(uint64_t guid) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%016" PRIx64, guid);
  return text;
}

int hcaCount(const IbLabOptions& options) {
  return options.shape.leaves * options.shape.hosts_per_leaf;
}

}  // namespace

Status checkIbLabOptions(const IbLabOptions& options) {
  FC_RETURN_IF_ERROR(ib::checkFatTree(options.shape));
  if (!plainName(options.name)) {
    return invalid("--name must be lower-case letters, digits and '-', not \"" + options.name +
                   "\"");
  }
  if (!plainName(options.prefix) || options.prefix.size() > 8) {
    return invalid("--prefix must be 1-8 lower-case letters, digits or '-', not \"" +
                   options.prefix + "\"");
  }
  if (options.subnet_managers < 1 || options.subnet_managers > 3) {
    return invalid("--subnet-managers must be 1, 2 or 3, not " +
                   std::to_string(options.subnet_managers));
  }
  if (hcaCount(options) < options.subnet_managers + 1) {
    return invalid(
        "the lab needs a channel adapter per subnet manager and one more to watch "
        "from: " +
        std::to_string(options.subnet_managers) + " SMs on " + std::to_string(hcaCount(options)) +
        " hosts (raise --hosts-per-leaf)");
  }
  if (options.sm_polling_timeout_ms < 100 || options.sm_polling_timeout_ms > 3600000) {
    return invalid("--sm-polling-ms must be between 100 and 3600000, not " +
                   std::to_string(options.sm_polling_timeout_ms));
  }
  if (options.sm_polling_retries < 1 || options.sm_polling_retries > 100) {
    return invalid("--sm-retries must be between 1 and 100, not " +
                   std::to_string(options.sm_polling_retries));
  }
  if (options.ready_timeout_ms < 1000) return invalid("--ready-timeout-ms must be at least 1000");
  return Status::ok();
}

std::vector<SubnetManagerInstance> placeSubnetManagers(const IbLabOptions& options) {
  std::vector<SubnetManagerInstance> sms;
  const int leaves = options.shape.leaves;
  for (int i = 0; i < options.subnet_managers; ++i) {
    const int host = (i % leaves) * options.shape.hosts_per_leaf + i / leaves;
    SubnetManagerInstance sm;
    sm.name = "sm" + std::to_string(i);
    sm.host = ib::hcaName(host);
    sm.priority = kTopPriority - i;
    sm.config = labDirectory(options) + "/" + sm.name + "/opensm.conf";
    sms.push_back(std::move(sm));
  }
  return sms;
}

std::string observerNode(const IbLabOptions& options) { return ib::hcaName(hcaCount(options) - 1); }

std::string subnetNamespace(const IbLabOptions& options) { return options.prefix + "-subnet"; }

std::string labDirectory(const IbLabOptions& options) {
  return options.state_dir + "/ib/" + options.name;
}

scenarios::IbSimulator simulatorOf(const IbLabOptions& options) {
  return {subnetNamespace(options), labDirectory(options) + "/console", options.preload,
          labDirectory(options)};
}

std::string openSmConfig(const IbLabOptions& options, const SubnetManagerInstance& sm,
                         const std::string& sm_dir) {
  std::string config;
  config += "# " + sm.name + " of IB lab " + options.name + " (fabric-chaos lab up --kind ib)\n";
  config += "sm_priority " + std::to_string(sm.priority) + "\n";
  config += "sminfo_polling_timeout " + std::to_string(options.sm_polling_timeout_ms) + "\n";
  config += "polling_retry_number " + std::to_string(options.sm_polling_retries) + "\n";
  config += "log_file " + sm_dir + "/opensm.log\n";
  // Flushed at once and kept over restarts: the log's timestamps are what takeover times are
  // checked against, and a restarted SM appends to the story of the one it replaces.
  config += "force_log_flush TRUE\n";
  config += "accum_log_file TRUE\n";
  config += "dump_files_dir " + sm_dir + "\n";
  return config;
}

std::string nodeDirectory(const scenarios::IbSimulator& sim, const std::string& node) {
  return sim.dir + "/at/" + node;
}

std::vector<std::string> attachedArgv(const scenarios::IbSimulator& sim, const std::string& node,
                                      const std::vector<std::string>& argv) {
  std::vector<std::string> out = {"ip",
                                  "netns",
                                  "exec",
                                  sim.netns,
                                  "env",
                                  "-C",
                                  nodeDirectory(sim, node),
                                  "SIM_HOST=" + node,
                                  "LD_PRELOAD=" + sim.preload};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::vector<std::string> attachedEnvironment(const scenarios::IbSimulator& sim,
                                             const std::string& node, const std::string& dir) {
  return {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "SIM_HOST=" + node, "LD_PRELOAD=" + sim.preload,
          "OSM_TMP_DIR=" + dir, "OSM_CACHE_DIR=" + dir};
}

core::Result<Fabric> describeIbLab(const IbLabOptions& options, const ib::IbSubnet& subnet) {
  Fabric fabric;
  fabric.name = options.name;
  fabric.kind = "ib";
  const std::string netns = subnetNamespace(options);
  std::map<uint64_t, const ib::IbNode*> by_guid;
  for (const ib::IbNode& node : subnet.nodes) by_guid[node.guid] = &node;
  auto labelsOf = [](const ib::IbNode& node) {
    std::map<std::string, std::string> labels = {{"role", ib::describe(node.role)},
                                                 {"guid", hexGuid(node.guid)}};
    if (node.lid) labels["lid"] = std::to_string(*node.lid);
    return labels;
  };
  std::map<std::string, std::set<int>> cabled_ports;  // switch -> ports
  std::map<std::string, std::string> leaf_of_host;
  std::map<std::string, const ib::IbEnd*> hca_end;
  for (const ib::IbLink& link : subnet.links) {
    for (const ib::IbEnd* end : {&link.a, &link.b}) {
      const ib::IbNode* node = by_guid.at(end->node_guid);
      if (node->type == ib::IbNodeType::kSwitch) cabled_ports[node->description].insert(end->port);
    }
  }
  for (const ib::IbNode& node : subnet.nodes) {
    if (node.type != ib::IbNodeType::kSwitch) continue;
    scenarios::Switch sw;
    sw.name = node.description;
    sw.netns = netns;
    for (int port : cabled_ports[node.description]) sw.ports.push_back(std::to_string(port));
    sw.labels = labelsOf(node);
    fabric.switches.push_back(std::move(sw));
  }
  for (const ib::IbLink& link : subnet.links) {
    const ib::IbNode* a = by_guid.at(link.a.node_guid);
    const ib::IbNode* b = by_guid.at(link.b.node_guid);
    const bool a_switch = a->type == ib::IbNodeType::kSwitch;
    const bool b_switch = b->type == ib::IbNodeType::kSwitch;
    if (a_switch && b_switch) {
      // The lower tier first: leaf before spine.
      const bool a_lower = a->role != ib::IbRole::kSpine;
      const ib::IbNode* lower = a_lower ? a : b;
      const ib::IbNode* upper = a_lower ? b : a;
      const ib::IbEnd& lower_end = a_lower ? link.a : link.b;
      const ib::IbEnd& upper_end = a_lower ? link.b : link.a;
      scenarios::SwitchLink sl;
      sl.id = lower->description + "-" + upper->description;
      sl.switch_name = lower->description;
      sl.port = std::to_string(lower_end.port);
      sl.peer_switch = upper->description;
      sl.peer_port = std::to_string(upper_end.port);
      sl.labels = {{"tier", "uplink"},
                   {"leaf", lower->description},
                   {"spine", upper->description},
                   {"rate", link.rate}};
      fabric.switch_links.push_back(std::move(sl));
    } else if (a_switch != b_switch) {
      const ib::IbNode* ca = a_switch ? b : a;
      const ib::IbNode* sw = a_switch ? a : b;
      const ib::IbEnd& ca_end = a_switch ? link.b : link.a;
      const ib::IbEnd& sw_end = a_switch ? link.a : link.b;
      scenarios::Link l;
      l.id = ca->description + "-" + sw->description;
      l.host = ca->description;
      l.nic = "port" + std::to_string(ca_end.port);
      l.switch_name = sw->description;
      l.port = std::to_string(sw_end.port);
      l.labels = {{"rate", link.rate}};
      if (ca_end.lid) l.labels["lid"] = std::to_string(*ca_end.lid);
      if (ca_end.port_guid) l.labels["port_guid"] = hexGuid(*ca_end.port_guid);
      leaf_of_host.emplace(ca->description, sw->description);
      hca_end.emplace(ca->description, &ca_end);
      fabric.links.push_back(std::move(l));
    }
  }
  std::vector<SubnetManagerInstance> sms = placeSubnetManagers(options);
  std::map<std::string, std::string> sm_of_host;
  for (const SubnetManagerInstance& sm : sms) sm_of_host[sm.host] = sm.name;
  for (const ib::IbNode& node : subnet.nodes) {
    if (node.type != ib::IbNodeType::kChannelAdapter) continue;
    scenarios::Host host;
    host.name = node.description;
    host.netns = netns;
    for (const scenarios::Link& link : fabric.links) {
      if (link.host == host.name) host.nics.push_back({link.nic, ""});
    }
    host.labels = labelsOf(node);
    if (auto leaf = leaf_of_host.find(host.name); leaf != leaf_of_host.end()) {
      host.labels["leaf"] = leaf->second;
    }
    if (auto sm = sm_of_host.find(host.name); sm != sm_of_host.end()) {
      host.labels["sm"] = sm->second;
    }
    fabric.hosts.push_back(std::move(host));
  }
  for (SubnetManagerInstance& sm : sms) {
    auto end = hca_end.find(sm.host);
    if (end == hca_end.end() || !end->second->port_guid) {
      return Status(StatusCode::kFailedPrecondition,
                    "the discovered subnet has no cabled port on " + sm.host + ", where " +
                        sm.name + " runs");
    }
    sm.port_guid = hexGuid(*end->second->port_guid);
  }
  fabric.ib = scenarios::IbFabric{std::move(sms), simulatorOf(options)};
  return fabric;
}

}  // namespace fabric_chaos::lab
