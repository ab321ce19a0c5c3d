#pragma once
// A run's workload as one handle: one workload per agent (the namespace lab: the local agent runs
// every rank; the VM lab: one agent per VM), started together and stopped together.

#include <cstdint>
#include <memory>
#include <vector>

#include "agent/agent.h"
#include "core/status.h"
#include "scenarios/engine/agent_directory.h"
#include "scenarios/engine/rank_plan.h"

namespace fabric_chaos::scenarios {

// Starts each agent's ranks (grouped by agent, in rank order within a group) with `origin_ns` as
// their clock origin, reporting to `listener`. When one agent refuses, the parts already started
// are stopped (SIGTERM, SIGKILL after stop_grace_ms) and its error is returned.
core::Result<std::unique_ptr<agent::WorkloadHandle>> startWorkloadGroup(
    AgentDirectory& agents, const std::vector<PlannedRank>& ranks, int64_t origin_ns,
    agent::WorkloadListener* listener, int stop_grace_ms);

}  // namespace fabric_chaos::scenarios
