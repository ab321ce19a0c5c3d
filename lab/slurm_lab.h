#pragma once
// A Slurm cluster made of the namespace lab's star (`lab up --with-slurm`, docs/lab.md): one
// munged in this namespace whose socket file serves every namespace, slurmctld in a controller
// namespace cabled to the star's bridge (the machine's own namespace cannot reach the lab's
// addresses), and one slurmd per host namespace, as planned by lab/slurm_lab_plan.h. The daemons
// are detached (sys::DaemonControl) and found again by what they are: their command name with the
// cluster's SLURM_CONF, or munged's socket argument, so `down` works from any later process.
// A cluster whose nodes do not all come up idle fails `up` saying what sinfo showed and how the
// logs end, and what was started is removed. Not thread-safe: one caller at a time.

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "injectors/sys/command.h"
#include "injectors/sys/daemon_control.h"
#include "lab/slurm_lab_plan.h"
#include "scenarios/topology.h"

namespace fabric_chaos::lab {

struct SlurmLabStatus {
  // The controller namespace, munged, slurmctld and a slurmd for every node of the conf on disk.
  bool up = false;
  bool controller_netns = false;
  bool munged = false;
  bool slurmctld = false;
  std::vector<std::string> nodes;          // NodeName entries of the slurm.conf on disk
  std::vector<std::string> running_nodes;  // nodes whose slurmd runs
  std::string conf;                        // its path; "" when there is none
};

class SlurmLab {
 public:
  using Progress = std::function<void(const std::string& line)>;

  SlurmLab(sys::CommandRunner& runner, sys::DaemonControl& daemons, SlurmLabOptions options);

  // Root, and munged, slurmctld, slurmd, sinfo and nsenter on PATH: a missing one is one sentence
  // naming its Debian package. up() checks it first; callers check it before building the lab.
  core::Status checkPrerequisites();
  // Starts the cluster on the star `fabric` (the netns lab's, up) and waits until sinfo shows
  // every node idle. A cluster already running with the same slurm.conf is left as it is; a
  // partial or different one is removed first. Returns the fabric's "slurm" section.
  core::Result<scenarios::SlurmCluster> up(const scenarios::Fabric& fabric,
                                           const Progress& progress);
  // Ends the cluster's daemons (slurmd and their job steps, slurmctld, munged) and anything left
  // in the controller namespace, removes that namespace (and with it its port on the bridge) and
  // the directory. OK when nothing is there.
  core::Status down(const Progress& progress);
  core::Result<SlurmLabStatus> status();

  const SlurmLabLayout& layout() const { return layout_; }

 private:
  // One of the cluster's running daemons, as /proc shows it.
  struct Running {
    pid_t pid = 0;
    std::string comm;
    std::string node;  // slurmd's -N; "" for the others
  };
  // Every running daemon of this cluster, in the order `down` ends them.
  std::vector<Running> runningDaemons();
  core::Result<bool> controllerNetnsPresent();
  core::Status prepareDirectory(const SlurmLabPlan& plan);
  core::Status startDaemons(const SlurmLabPlan& plan, const Progress& progress);
  core::Status waitForMunge(pid_t munged);
  core::Status waitUntilIdle(const SlurmLabPlan& plan, const Progress& progress);
  // "" while every daemon started lives; else which one exited, with the tail of its log.
  std::string deadDaemon();

  sys::CommandRunner& runner_;
  sys::DaemonControl& daemons_;
  SlurmLabOptions options_;
  SlurmLabLayout layout_;
  struct Started {
    std::string what;  // "munged", "slurmctld", "slurmd h0"
    pid_t pid = 0;
    std::vector<std::string> logs;  // its own log, then its stdout/stderr
  };
  std::vector<Started> started_;
};

}  // namespace fabric_chaos::lab
