#include "scenarios/engine/rank_plan.h"

namespace fabric_chaos::scenarios {

using core::Status;
using core::StatusCode;

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
  const int world = static_cast<int>(hosts.size());
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
    spec.message_bytes = scenario.workload.message_bytes;
    spec.compute_ms = scenario.workload.compute_ms;
    spec.peer_timeout_ms = scenario.workload.peer_timeout_ms;
    spec.reconnect_budget_ms = scenario.workload.reconnect_budget_ms;
    spec.transport = scenario.workload.transport;
    spec.dscp = scenario.workload.dscp;
    // The engine stops the ranks itself; their own limit only guards against a lost engine.
    spec.max_duration_ms = scenario.max_duration_ms + 60000;
    ranks.push_back({spec, AgentRef{host.agent, host.agent_token_file}});
  }
  return ranks;
}

}  // namespace fabric_chaos::scenarios
