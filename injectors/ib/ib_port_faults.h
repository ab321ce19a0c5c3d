#pragma once
// ib_link_down, ib_link_flap and ib_mad_loss (injectors/model/ib_fault_specs.h) on a port of the
// simulated IB lab: commands to the ibsim that models it (injectors/ib/ib_simulator.h). Unlink
// takes the cable down on both ends and makes the switch send the SM a trap, as a real link
// failure does; ReLink puts it back. Error sets the share of MADs the port drops. On a real
// subnet (a target without a namespace) these kinds need PortInfo Set MADs, which this version
// does not send: kNotSupported, said plainly. Called from the engine's run thread; no state
// between calls.

#include "injectors/injector.h"
#include "injectors/sys/daemon_control.h"

namespace fabric_chaos::injectors {

enum class IbPortFaultKind { kLinkDown, kLinkFlap, kMadLoss };

class IbPortFault : public Injector {
 public:
  IbPortFault(IbPortFaultKind kind, sys::DaemonControl* daemons) : kind_(kind), daemons_(daemons) {}

  const KindSpec& spec() const override;
  KindInfo info() const override;
  core::Status validate(const json& params) const override;
  // {"simulator_pid"}: the ibsim that models the port.
  core::Result<json> capture(const Fault& fault) override;
  core::Status apply(const Fault& fault) override;
  // ReLink, or an error rate of 0. With no ibsim left (the lab went down) nothing is left to
  // restore: reverted.
  core::Status revert(const Fault& fault, const json& prior) override;
  // {"simulator_pid", "node", "port"}
  core::Result<json> observe(const Fault& fault) override;

 private:
  core::Result<IbPortTarget> simulatedPort(const Fault& fault) const;

  IbPortFaultKind kind_;
  sys::DaemonControl* daemons_;
};

}  // namespace fabric_chaos::injectors
