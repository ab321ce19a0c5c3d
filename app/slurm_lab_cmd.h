#pragma once
// Slurm's part of `fabric-chaos lab` for the namespace lab (lab/slurm_lab.h): `lab up
// --with-slurm` brings the cluster up after the namespaces and writes it into the lab's fabric
// file; `lab down` takes it down before the namespaces go; a plain `lab up` takes it down too (a
// lab without Slurm is another lab), and `lab status` says whether it runs. Not thread-safe.

#include <functional>
#include <memory>
#include <string>

#include "core/status.h"
#include "injectors/sys/command.h"
#include "injectors/sys/daemon_control.h"
#include "lab/netns_lab.h"
#include "lab/slurm_lab.h"

namespace fabric_chaos::app {

class LabSlurm {
 public:
  using Progress = std::function<void(const std::string& line)>;

  // `options` are the namespace lab's; the cluster takes its name, prefix, subnet and state
  // directory (made absolute: slurm.conf names its files by absolute paths).
  LabSlurm(sys::CommandRunner& runner, const lab::LabOptions& options);

  // The namespace lab (star only), then its Slurm cluster; returns the fabric with its "slurm"
  // section, as written to the fabric file. A lab already up with its cluster is left as it is:
  // NetnsLab::up would take the controller namespace and the "slurm" section for another lab's
  // and rebuild it under Slurm's feet. A cluster that does not come up fails with its reason and
  // leaves the namespace lab up without Slurm.
  core::Result<scenarios::Fabric> upWithLab(lab::NetnsLab& lab, const Progress& progress);
  // Takes the cluster down (OK when there is none) and drops its "slurm" section from the fabric
  // file, which goes on describing the namespace lab.
  core::Status down(const Progress& progress);
  // "slurm: up (...)" or "slurm: not running", for `lab status`.
  std::string statusLine();

 private:
  core::Status forgetInFabricFile();

  lab::LabOptions options_;
  lab::SlurmLabOptions slurm_options_;
  std::unique_ptr<sys::DaemonControl> daemons_;
  lab::SlurmLab slurm_;
};

}  // namespace fabric_chaos::app
