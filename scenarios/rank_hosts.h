#pragma once
// Where a workload rank runs: rank i on the i-th workload host (scenarios/engine/rank_plan.h lays
// them out so), the workload's hosts being the scenario's workload.hosts, or every host of the
// fabric in order when that is empty. Steps aimed at a rank (the verbs_* and rdma_* kinds) act on
// that host. Pure.

#include <string>
#include <vector>

#include "core/status.h"
#include "scenarios/topology.h"

namespace fabric_chaos::scenarios {

// kUnprocessable "rank 4: the workload has 2 ranks (0 to 1)" for a rank it does not have.
core::Result<std::string> hostOfRank(int rank, const Fabric& fabric,
                                     const std::vector<std::string>& workload_hosts);

}  // namespace fabric_chaos::scenarios
