#pragma once
// The engine's hands on a Slurm cluster (docs/workloads.md, "Through Slurm"): starts a run's job
// step with srun and signals or cancels it with scancel, both in the cluster's submit namespace
// with its SLURM_CONF. The only code that touches Slurm; scenarios/engine/slurm_workload.h holds
// the logic and is tested against a fake. Thread-safe.

#include <memory>
#include <optional>
#include <string>

#include "core/status.h"
#include "injectors/sys/command.h"
#include "injectors/sys/process.h"
#include "scenarios/slurm_fabric.h"
#include "workload/slurm/srun_step.h"

namespace fabric_chaos::scenarios {

class SlurmSubmitter {
 public:
  virtual ~SlurmSubmitter() = default;
  // Writes the step's multi-prog file (at the path its argv names) and hostfile, and starts srun
  // with stdout and stderr on pipes. srun dies with this process (the launcher's death signal),
  // and takes its step with it.
  virtual core::Result<std::unique_ptr<sys::ChildProcess>> start(
      const SlurmCluster& cluster, const workload::SrunStep& step) = 0;
  // scancel --name=job_name [--signal=signal_name]: an error names scancel's own message.
  virtual core::Status scancel(const SlurmCluster& cluster, const std::string& job_name,
                               std::optional<std::string> signal_name) = 0;
  // Removes the files start() wrote for that multi-prog path.
  virtual void forget(const workload::SrunStep& step) = 0;
  // Where the step files go: an absolute directory the submitting srun can read.
  virtual std::string stepDir() const = 0;
};

// The real one: `/usr/bin/env SLURM_CONF=... SLURM_HOSTFILE=... srun ...`, spawned in
// cluster.submit_netns; scancel through `nsenter --net=/run/netns/<ns>`. Step files under
// step_dir (created on first use).
std::unique_ptr<SlurmSubmitter> makeSlurmSubmitter(sys::ProcessLauncher& processes,
                                                   sys::CommandRunner& commands,
                                                   std::string step_dir);

}  // namespace fabric_chaos::scenarios
