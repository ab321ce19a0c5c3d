#pragma once
// sm_failover (injectors/model/ib_fault_specs.h): a subnet manager fails and a standby must take
// over. The SM is an OpenSM process found through /proc (sys/daemon_control.h): in the IB lab,
// the one in the subnet's namespace attached to the target's node (SIM_HOST); on a real host, the
// OpenSM of the agent's own namespace (named by -g when there are several).
// - kill / stop: capture records how it runs (command line, environment, directory, namespace,
//   where its output goes); apply sends SIGKILL or SIGTERM and waits until it is gone; revert
//   starts it again exactly so, detached, unless an SM for that node already runs.
// - port_down: the SM's own port is unlinked in the simulator (the IB lab only); revert relinks
//   it. The SM keeps running, cut off.
// Whether mastership returns after a revert is the IB probe's to measure, not this kind's.
// Called from the engine's run thread; no state between calls.

#include <vector>

#include "injectors/injector.h"
#include "injectors/sys/daemon_control.h"

namespace fabric_chaos::injectors {

class SmFailover : public Injector {
 public:
  explicit SmFailover(sys::DaemonControl* daemons) : daemons_(daemons) {}

  const KindSpec& spec() const override;
  KindInfo info() const override;
  core::Status validate(const json& params) const override;
  // kill/stop: {"mode", "pid", "argv", "env", "cwd", "netns", "log"}; port_down: {"mode",
  // "node", "pid"}. kFailedPrecondition when no OpenSM (or more than one) is the target's.
  core::Result<json> capture(const Fault& fault) override;
  core::Status apply(const Fault& fault) override;
  core::Status revert(const Fault& fault, const json& prior) override;
  // {"running", "pids"}: the target's OpenSM processes now.
  core::Result<json> observe(const Fault& fault) override;

 private:
  core::Result<std::vector<sys::ProcessInfo>> targetSms(const SubnetManagerTarget& target);

  sys::DaemonControl* daemons_;
};

}  // namespace fabric_chaos::injectors
