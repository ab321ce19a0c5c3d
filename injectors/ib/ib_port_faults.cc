#include "injectors/ib/ib_port_faults.h"

#include "injectors/ib/ib_simulator.h"
#include "injectors/model/ib_fault_specs.h"

namespace fabric_chaos::injectors {

using core::Status;
using core::StatusCode;

const KindSpec& IbPortFault::spec() const {
  switch (kind_) {
    case IbPortFaultKind::kLinkDown:
      return ibLinkDownSpec();
    case IbPortFaultKind::kLinkFlap:
      return ibLinkFlapSpec();
    case IbPortFaultKind::kMadLoss:
      return ibMadLossSpec();
  }
  return ibLinkDownSpec();
}

KindInfo IbPortFault::info() const {
  return {spec().kind, spec().summary, true, "", "ibsim console (the IB lab)"};
}

Status IbPortFault::validate(const json& params) const { return checkParams(spec(), params); }

core::Result<IbPortTarget> IbPortFault::simulatedPort(const Fault& fault) const {
  const IbPortTarget* port = std::get_if<IbPortTarget>(&fault.target);
  if (port == nullptr) {
    return Status(
        StatusCode::kInvalidArgument,
        spec().kind + " acts on an ib_port, not on target type " + toString(typeOf(fault.target)));
  }
  if (port->netns.empty()) {
    return Status(StatusCode::kNotSupported,
                  spec().kind +
                      " on a real subnet needs PortInfo Set MADs, which this version "
                      "does not send; it acts on the IB lab's simulated ports");
  }
  return *port;
}

core::Result<json> IbPortFault::capture(const Fault& fault) {
  auto port = simulatedPort(fault);
  if (!port.isOk()) return port.status();
  auto pid = findSimulator(*daemons_, port->netns);
  if (!pid.isOk()) return pid.status();
  return json{{"simulator_pid", *pid}};
}

Status IbPortFault::apply(const Fault& fault) {
  auto port = simulatedPort(fault);
  if (!port.isOk()) return port.status();
  const std::string command =
      kind_ == IbPortFaultKind::kMadLoss
          ? errorRateCommand(port->node, port->port, fault.params.value("percent", 0))
          : unlinkCommand(port->node, port->port);
  return sendSimulatorCommand(*daemons_, port->netns, command);
}

Status IbPortFault::revert(const Fault& fault, const json&) {
  auto port = simulatedPort(fault);
  if (!port.isOk()) return port.status();
  const std::string command = kind_ == IbPortFaultKind::kMadLoss
                                  ? errorRateCommand(port->node, port->port, 0)
                                  : relinkCommand(port->node, port->port);
  const Status sent = sendSimulatorCommand(*daemons_, port->netns, command);
  // No simulator, no namespace: the lab is gone and its links with it.
  if (sent.code() == StatusCode::kFailedPrecondition) return Status::ok();
  return sent;
}

core::Result<json> IbPortFault::observe(const Fault& fault) {
  auto port = simulatedPort(fault);
  if (!port.isOk()) return port.status();
  auto pid = findSimulator(*daemons_, port->netns);
  if (!pid.isOk()) return pid.status();
  return json{{"simulator_pid", *pid}, {"node", port->node}, {"port", port->port}};
}

}  // namespace fabric_chaos::injectors
