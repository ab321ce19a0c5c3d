#pragma once
// What the process kinds' steps act on (the verbs_* kinds, injectors/model/verbs_fault_specs.h):
// processes on a fabric host, acted on by that host's agent.
// - `rank`: the workload's rank on its host (rank i runs on the i-th workload host, as
//   scenarios/engine/rank_plan.h lays them out); the agent finds it by the rank the process
//   reports (FABRIC_CHAOS_RANK, which the agent sets when it starts the rank).
// - `host`, with `process`: the processes of that name there; without: every shim-loaded process
//   there (the workload's rank and any job of the user's own started with the library).
// And the refusals: a process kind aimed at links, labels or an SM, and a rank or process name on
// a kind that does not act on processes. Pure.

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "scenarios/model.h"
#include "scenarios/topology.h"

namespace fabric_chaos::scenarios {

// nullopt when neither the kind acts on processes nor the selector names a rank or process: the
// other resolutions apply. `workload_hosts` is the scenario's workload.hosts (empty: every host of
// the fabric, in order). kUnprocessable for a rank the workload does not have or an unknown host;
// kInvalidArgument for a selector the kind cannot take.
std::optional<core::Result<std::vector<ResolvedTarget>>> resolveProcessStepTargets(
    const FaultStep& step, const Fabric& fabric, const std::vector<std::string>& workload_hosts);

}  // namespace fabric_chaos::scenarios
