#pragma once
// The simulated InfiniBand lab (`lab up --kind ib`, docs/ib.md). ibsim models the fat tree of
// lab/ib_lab_plan.h inside a network namespace of its own (its sockets are abstract unix sockets,
// which are per namespace), with a FIFO as its console; 1-3 OpenSM instances, each attached to a
// channel adapter through umad2sim, bring the subnet up with distinct priorities: the master
// first, the standbys once it rules. The subnet is up when the observer node sees the
// highest-priority SM as master, every other SM answers as standby, and ibnetdiscover finds every
// node and cable with its LID; a subnet that does not come up gets its SMs started once more. The
// fabric is registered from that discovery, through the parser `fabric import` uses. Everything
// lives in the lab's namespace and directory, so `down` ends every process there and removes both.
// An SM that stays DISCOVERING, a dead daemon, a subnet that never comes up: `up` fails saying what
// it saw, and removes what it started. Not thread-safe: one caller at a time.

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "ib/sminfo.h"
#include "ib/subnet.h"
#include "injectors/sys/command.h"
#include "injectors/sys/daemon_control.h"
#include "lab/ib_lab_plan.h"
#include "scenarios/topology.h"

namespace fabric_chaos::lab {

// What one SM answered, or why it did not.
struct ObservedSm {
  scenarios::SubnetManagerInstance sm;
  std::optional<ib::SmInfoReply> reply;
  std::string problem;  // "" when it answered
};

struct IbLabStatus {
  bool up = false;  // namespace present, ibsim running, fabric file written
  bool netns_present = false;
  int processes = 0;  // in the subnet's namespace (ibsim, OpenSMs)
  std::string fabric_file;
};

class IbLab {
 public:
  using Progress = std::function<void(const std::string& line)>;

  IbLab(sys::CommandRunner& runner, sys::DaemonControl& daemons, IbLabOptions options);

  // Checks root, the tools and the options first, each failure one clear sentence. A lab that is
  // already up (its fabric file, namespace and ibsim present) is left as it is; anything else
  // under this name is removed and built again.
  core::Result<scenarios::Fabric> up(const Progress& progress);
  // Ends every process in the lab's namespace (OpenSMs first: one whose ibsim went first ignores
  // SIGTERM for seconds), then removes the namespace, the directory with its FIFO, and the
  // fabric file. OK when nothing is there.
  core::Status down(const Progress& progress);
  core::Result<IbLabStatus> status();

  // Each SM's SMInfo as the observer node reads it now.
  std::vector<ObservedSm> observeSubnetManagers(const ib::IbSubnet& subnet);
  std::vector<ObservedSm> observeSubnetManagers(
      const ib::IbSubnet& subnet, const std::vector<scenarios::SubnetManagerInstance>& sms);
  // `ibnetdiscover` from the observer node, parsed.
  core::Result<ib::IbSubnet> discover();

  std::string fabricFile() const;

 private:
  core::Status checkPrerequisites();
  core::Status startSimulator(const Progress& progress);
  core::Status startSubnetManagers(const Progress& progress,
                                   const std::vector<scenarios::SubnetManagerInstance>& sms);
  // Ends the SMs started so far (a retry starts them again).
  void stopSubnetManagers();
  // Polls until the subnet is up with `running` (the first master, the others standby; see
  // above) or timeout_ms pass.
  core::Result<ib::IbSubnet> waitForSubnet(
      const Progress& progress, const std::vector<scenarios::SubnetManagerInstance>& running,
      int timeout_ms);
  // "" while every daemon started lives; else which one died, with its log's tail.
  std::string deadDaemon();
  core::Result<sys::CommandResult> attached(const std::string& node,
                                            const std::vector<std::string>& argv);
  core::Result<std::vector<pid_t>> namespacePids();

  sys::CommandRunner& runner_;
  sys::DaemonControl& daemons_;
  IbLabOptions options_;
  struct Started {
    std::string what;  // "ibsim", "sm0 (OpenSM on h0)"
    pid_t pid = 0;
    std::string log;
    bool sm = false;
  };
  std::vector<Started> started_;
};

}  // namespace fabric_chaos::lab
