#pragma once
// ib_link_down, ib_link_flap and ib_mad_loss (injectors/model/ib_fault_specs.h).
// - On a port of the simulated IB lab (a target with the simulator's namespace): commands to the
//   ibsim that models it (injectors/ib/ib_simulator.h). Unlink takes the cable down on both ends
//   and makes the switch send the SM a trap, as a real link failure does; ReLink puts it back.
//   Error sets the share of MADs the port drops.
// - On a real subnet (a target without a namespace): the link kinds set the switch port's
//   physical state to Disabled, and back to Polling on revert (unless it was disabled before),
//   through `fabric-chaos ib-port` on this host (injectors/sys/ib_port_command.h); a target that
//   names a channel adapter acts on the switch port at the other end of its cable. ib_mad_loss
//   has no equivalent on real hardware: kNotSupported, said plainly.
// Called from the engine's run thread; no state between calls.

#include "injectors/injector.h"
#include "injectors/sys/daemon_control.h"
#include "injectors/sys/ib_port_command.h"

namespace fabric_chaos::injectors {

enum class IbPortFaultKind { kLinkDown, kLinkFlap, kMadLoss };

class IbPortFault : public Injector {
 public:
  // `ports`: the real-subnet path; null leaves real subnets unsupported.
  IbPortFault(IbPortFaultKind kind, sys::DaemonControl* daemons,
              sys::IbPortCommand* ports = nullptr)
      : kind_(kind), daemons_(daemons), ports_(ports) {}

  const KindSpec& spec() const override;
  KindInfo info() const override;
  core::Status validate(const json& params) const override;
  // {"simulator_pid"}: the ibsim that models the port; on a real subnet {"switch", "port",
  // "before"}: the switch port acted on and its physical state.
  core::Result<json> capture(const Fault& fault) override;
  core::Status apply(const Fault& fault) override;
  // ReLink, or an error rate of 0. With no ibsim left (the lab went down) nothing is left to
  // restore: reverted.
  core::Status revert(const Fault& fault, const json& prior) override;
  // {"simulator_pid", "node", "port"}
  core::Result<json> observe(const Fault& fault) override;

 private:
  core::Result<IbPortTarget> portOf(const Fault& fault) const;
  // The real-subnet path for this target: kNotSupported for ib_mad_loss or without `ports_`.
  core::Status realSubnetSupported() const;
  core::Result<json> capturePhysical(const IbPortTarget& port);
  core::Status revertPhysical(const IbPortTarget& port, const json& prior);

  IbPortFaultKind kind_;
  sys::DaemonControl* daemons_;
  sys::IbPortCommand* ports_;
};

}  // namespace fabric_chaos::injectors
