#include "scenarios/engine/rank_plan.h"

#include "injectors/model/kind_spec.h"

namespace fabric_chaos::scenarios {

using core::Status;
using core::StatusCode;

namespace {

// The port GUID of a host's first cable on an IB fabric (the link's port_guid label).
std::string portGuidOf(const Fabric& fabric, const Host& host) {
  for (const Link& link : fabric.links) {
    if (link.host != host.name) continue;
    auto guid = link.labels.find("port_guid");
    if (guid != link.labels.end()) return guid->second;
  }
  return "";
}

// On an InfiniBand fabric every workload host runs the IB probe (workload/ib_probe.h), asking the
// SA for a path to the next host's port, round the ring as the ranks would connect.
core::Result<std::vector<PlannedRank>> planIbProbes(const Scenario& scenario, const Fabric& fabric,
                                                    const std::vector<const Host*>& hosts) {
  if (scenario.workload.transport == "verbs") {
    return Status(StatusCode::kUnprocessable,
                  "fabric " + fabric.name +
                      " is an InfiniBand subnet: its workload is the IB probe (workload.transport "
                      "ib_probe, or left out), not verbs");
  }
  const int world = static_cast<int>(hosts.size());
  std::vector<PlannedRank> ranks;
  for (int i = 0; i < world; ++i) {
    const Host& host = *hosts[static_cast<size_t>(i)];
    const Host& next = *hosts[static_cast<size_t>((i + 1) % world)];
    const std::string peer = portGuidOf(fabric, next);
    if (peer.empty()) {
      return Status(StatusCode::kUnprocessable,
                    "host " + next.name + " has no cabled IB port (no port_guid on its link)");
    }
    agent::RankSpec spec;
    spec.rank = i;
    spec.world = world;
    spec.netns = host.netns;
    spec.transport = "ib_probe";
    spec.next_addr = peer;
    if (const auto& sim = fabric.ib->simulator) {
      spec.ib_node = host.name;
      spec.ib_preload = sim->preload;
      spec.ib_dir = sim->dir;
    }
    spec.max_duration_ms = scenario.max_duration_ms + 60000;
    ranks.push_back({spec, host.name, AgentRef{host.agent, host.agent_token_file}});
  }
  return ranks;
}

// An external workload's rank on `host`: rendezvous at rank 0's first address. pytorch-ddp is the
// shipped script under the scenario's interpreter, with gloo on the rank's fabric interface (its
// hosts share one hostname, which resolves to 127.0.0.1 in every namespace).
agent::ExecRankSpec execRank(const WorkloadSpec& workload, const Host& host, const Host& rank0) {
  agent::ExecRankSpec exec;
  exec.master_addr = rank0.nics[0].address;
  exec.master_port = workload.exec.master_port;
  exec.ifname = host.nics[0].name;
  exec.silence_ms = workload.exec.silence_ms;
  exec.parser = workload.exec.parser;
  exec.reports_steps = workload.exec.every_rank_reports || &host == &rank0;
  std::map<std::string, std::string> env = workload.exec.env;
  if (workload.kind == WorkloadKind::kPytorchDdp) {
    exec.script = "pytorch-ddp";
    exec.command = {workload.exec.python, "{script}"};
    exec.parser = workload::StepParserSpec{};  // its JSON lines
    env.try_emplace("GLOO_SOCKET_IFNAME", host.nics[0].name);
  }
  exec.command.insert(exec.command.end(), workload.exec.command.begin(),
                      workload.exec.command.end());
  for (const auto& [name, value] : env) exec.env.push_back(name + "=" + value);
  return exec;
}

}  // namespace

bool armsVerbsShim(const Scenario& scenario) {
  for (const FaultStep& step : scenario.steps) {
    const injectors::KindSpec* spec = injectors::findKindSpec(step.kind);
    if (spec != nullptr && spec->resource == kVerbsShimResource) return true;
  }
  return false;
}

core::Result<std::vector<PlannedRank>> planRanks(const Scenario& scenario, const Fabric& fabric,
                                                 int port) {
  std::vector<const Host*> hosts;
  if (scenario.workload.hosts.empty()) {
    for (const auto& h : fabric.hosts) hosts.push_back(&h);
  } else {
    for (const auto& name : scenario.workload.hosts) {
      const Host* h = fabric.findHost(name);
      if (h == nullptr) {
        return Status(StatusCode::kUnprocessable,
                      "workload host " + name + " is not in fabric " + fabric.name);
      }
      hosts.push_back(h);
    }
  }
  if (hosts.size() < 2) {
    return Status(StatusCode::kUnprocessable, "the workload needs at least 2 hosts");
  }
  if (fabric.ib && scenario.workload.kind == WorkloadKind::kRing) {
    return planIbProbes(scenario, fabric, hosts);
  }
  if (scenario.workload.transport == "ib_probe") {
    return Status(StatusCode::kUnprocessable,
                  "workload.transport ib_probe probes an InfiniBand subnet; fabric " + fabric.name +
                      " is not one");
  }
  const int world = static_cast<int>(hosts.size());
  const bool verbs_shim = armsVerbsShim(scenario);
  if (verbs_shim && scenario.workload.kind != WorkloadKind::kRing &&
      scenario.workload.exec.launcher == WorkloadLauncher::kSlurm) {
    return Status(StatusCode::kUnprocessable,
                  "the verbs_* faults load their library into ranks an agent starts; with "
                  "workload.launcher \"slurm\" srun starts them (use launcher \"agents\")");
  }
  std::vector<PlannedRank> ranks;
  for (int i = 0; i < world; ++i) {
    const Host& host = *hosts[static_cast<size_t>(i)];
    const Host& next = *hosts[static_cast<size_t>((i + 1) % world)];
    if (host.nics.empty() || next.nics.empty()) {
      const Host& bare = host.nics.empty() ? host : next;
      return Status(StatusCode::kUnprocessable, "host " + bare.name + " has no NIC address");
    }
    agent::RankSpec spec;
    spec.rank = i;
    spec.world = world;
    spec.netns = host.netns;
    spec.listen_addr = host.nics[0].address;
    spec.port = port;
    spec.next_addr = next.nics[0].address;
    spec.next_port = port;
    if (scenario.workload.kind != WorkloadKind::kRing) {
      spec.transport = "exec";
      spec.exec = execRank(scenario.workload, host, *hosts.front());
      spec.verbs_shim = verbs_shim;
      spec.max_duration_ms = scenario.max_duration_ms + 60000;
      ranks.push_back({spec, host.name, AgentRef{host.agent, host.agent_token_file}});
      continue;
    }
    spec.message_bytes = scenario.workload.message_bytes;
    spec.compute_ms = scenario.workload.compute_ms;
    spec.peer_timeout_ms = scenario.workload.peer_timeout_ms;
    spec.reconnect_budget_ms = scenario.workload.reconnect_budget_ms;
    spec.transport = scenario.workload.transport;
    spec.dscp = scenario.workload.dscp;
    spec.verbs_shim = verbs_shim;
    // The engine stops the ranks itself; their own limit only guards against a lost engine.
    spec.max_duration_ms = scenario.max_duration_ms + 60000;
    ranks.push_back({spec, host.name, AgentRef{host.agent, host.agent_token_file}});
  }
  return ranks;
}

}  // namespace fabric_chaos::scenarios
