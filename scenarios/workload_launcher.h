#pragma once
// Who starts an external workload's ranks (docs/workloads.md): each host's agent, or the
// fabric's Slurm cluster as one srun job step (scenarios/slurm_fabric.h). The JSON codec of
// workload.launcher and workload.slurm. Pure; any thread.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::scenarios {

// In JSON: workload.launcher "agents" (the default) or "slurm".
enum class WorkloadLauncher { kAgents, kSlurm };
std::string_view workloadLauncherName(WorkloadLauncher launcher);

// workload.slurm: how the step is submitted.
struct SlurmLaunchSpec {
  std::string partition;    // "" = the fabric's, else the cluster's default
  std::string reservation;  // "" = none
  // srun's --wait: once one task has ended, the others are ended this long after. A node a fault
  // cut off may never report its task's end; without it srun would wait forever.
  int wait_s = 30;
  std::vector<std::string> srun_args;  // more srun options (--account=..., --time=...)
  bool operator==(const SlurmLaunchSpec&) const = default;
};

// Reads "launcher" and "slurm" of the workload object at `path`: "slurm" only with launcher
// "slurm"; kInvalidArgument naming the field.
core::Status parseWorkloadLauncher(const nlohmann::json& obj, const std::string& path,
                                   WorkloadLauncher& launcher, SlurmLaunchSpec& slurm);
// The fields parseWorkloadLauncher reads, added to `workload` (nothing for the default).
void addWorkloadLauncherJson(WorkloadLauncher launcher, const SlurmLaunchSpec& slurm,
                             nlohmann::json& workload);

}  // namespace fabric_chaos::scenarios
