#pragma once
// A run's external workload launched the way its cluster launches jobs (docs/workloads.md,
// "Through Slurm"): every rank one task of one srun job step, task i on the Slurm node of rank
// i's host, each task `fabric-chaos exec-rank` around the scenario's command. What the tasks
// print comes back through srun's labelled stdout and reads exactly as an agent's ranks do;
// srun's verdicts on its stderr are the ranks' exits. Our agents still inject the faults.
//
// stop(): scancel --signal=TERM (each exec-rank ends its command and writes its last samples),
// then after the grace a plain scancel, then SIGKILL to srun; the step is never left running.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "core/status.h"
#include "scenarios/engine/rank_plan.h"
#include "scenarios/engine/slurm_submitter.h"
#include "scenarios/exec_workload.h"
#include "scenarios/slurm_fabric.h"

namespace fabric_chaos::scenarios {

struct SlurmStepPlan {
  std::string job_name;  // unique per run: scancel finds the step by it
  std::string program;   // fabric-chaos at this path on every node
  SlurmLaunchSpec launch;
};

// Starts the step; kInvalidArgument when it cannot be described (a node name srun would misread,
// srun_args that take over the placement), or the submitter's error when srun cannot start.
// Report times from the tasks are on CLOCK_REALTIME; they are moved to the engine's clock here.
core::Result<std::unique_ptr<agent::WorkloadHandle>> startSlurmWorkload(
    SlurmSubmitter& submitter, const SlurmCluster& cluster, const SlurmStepPlan& plan,
    const std::vector<PlannedRank>& ranks, int64_t origin_ns, agent::WorkloadListener* listener);

}  // namespace fabric_chaos::scenarios
