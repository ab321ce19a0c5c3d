#pragma once
// Which ranks a run starts, where, and through which agent: worked out from the scenario and the
// fabric alone, with no I/O, so that every refusal is unit-tested without a workload.

#include <vector>

#include "agent/agent.h"
#include "core/status.h"
#include "scenarios/engine/agent_directory.h"
#include "scenarios/model.h"
#include "scenarios/topology.h"

namespace fabric_chaos::scenarios {

struct PlannedRank {
  agent::RankSpec spec;
  std::string host;  // the fabric host it runs on
  AgentRef agent;    // the agent of the rank's host starts it
};

// The resource the verbs_* kinds declare (injectors/model/verbs_fault_specs.h): a scenario with
// such a step starts its ranks with the verbs fault library loaded (RankSpec::verbs_shim).
inline constexpr const char* kVerbsShimResource = "verbs_shim";
bool armsVerbsShim(const Scenario& scenario);

// One rank per workload host (every host of the fabric when the scenario names none), in that
// order: rank i listens on its host's first NIC at `port` and sends to rank i+1's, round the ring.
// kUnprocessable for a named host the fabric lacks, fewer than 2 hosts, or a host with no NIC.
core::Result<std::vector<PlannedRank>> planRanks(const Scenario& scenario, const Fabric& fabric,
                                                 int port);

}  // namespace fabric_chaos::scenarios
