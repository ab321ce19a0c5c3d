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
  if (kind_ == IbPortFaultKind::kMadLoss || ports_ == nullptr) {
    return {spec().kind, spec().summary, true, "", "ibsim console (the IB lab)"};
  }
  return {spec().kind, spec().summary, true, "",
          "ibsim console (the IB lab); PortInfo Set by direct route (real subnets)"};
}

Status IbPortFault::validate(const json& params) const { return checkParams(spec(), params); }

core::Result<IbPortTarget> IbPortFault::portOf(const Fault& fault) const {
  const IbPortTarget* port = std::get_if<IbPortTarget>(&fault.target);
  if (port == nullptr) {
    return Status(
        StatusCode::kInvalidArgument,
        spec().kind + " acts on an ib_port, not on target type " + toString(typeOf(fault.target)));
  }
  if (port->netns.empty()) FC_RETURN_IF_ERROR(realSubnetSupported());
  return *port;
}

Status IbPortFault::realSubnetSupported() const {
  if (kind_ == IbPortFaultKind::kMadLoss) {
    return Status(StatusCode::kNotSupported,
                  "ib_mad_loss drops MADs in the IB lab's simulator; real switches and HCAs have "
                  "no such setting");
  }
  if (ports_ == nullptr) {
    return Status(StatusCode::kNotSupported,
                  spec().kind +
                      " on a real subnet runs this program's ib-port command, which "
                      "this agent was not given");
  }
  return Status::ok();
}

core::Result<json> IbPortFault::capturePhysical(const IbPortTarget& port) {
  auto state = ports_->run(port.node, port.port, sys::IbPortCommandAction::kQuery);
  if (!state.isOk()) return state.status();
  return json{{"switch", state->value("switch", "")},
              {"port", state->value("port", 0)},
              {"before", state->value("before", "")}};
}

Status IbPortFault::revertPhysical(const IbPortTarget& port, const json& prior) {
  // A port that was already disabled before the fault is left so: nothing of ours to undo.
  if (prior.value("before", "") == "disabled") return Status::ok();
  // The captured switch port: a channel adapter's cable is found by its switch end once down.
  const std::string node = prior.value("switch", port.node);
  const int number = prior.value("port", port.port);
  auto enabled = ports_->run(node, number, sys::IbPortCommandAction::kEnable);
  return enabled.status();
}

core::Result<json> IbPortFault::capture(const Fault& fault) {
  auto port = portOf(fault);
  if (!port.isOk()) return port.status();
  if (port->netns.empty()) return capturePhysical(*port);
  auto pid = findSimulator(*daemons_, port->netns);
  if (!pid.isOk()) return pid.status();
  return json{{"simulator_pid", *pid}};
}

Status IbPortFault::apply(const Fault& fault) {
  auto port = portOf(fault);
  if (!port.isOk()) return port.status();
  if (port->netns.empty()) {
    return ports_->run(port->node, port->port, sys::IbPortCommandAction::kDisable).status();
  }
  const std::string command =
      kind_ == IbPortFaultKind::kMadLoss
          ? errorRateCommand(port->node, port->port, fault.params.value("percent", 0))
          : unlinkCommand(port->node, port->port);
  return sendSimulatorCommand(*daemons_, port->netns, command);
}

Status IbPortFault::revert(const Fault& fault, const json& prior) {
  auto port = portOf(fault);
  if (!port.isOk()) return port.status();
  if (port->netns.empty()) return revertPhysical(*port, prior);
  const std::string command = kind_ == IbPortFaultKind::kMadLoss
                                  ? errorRateCommand(port->node, port->port, 0)
                                  : relinkCommand(port->node, port->port);
  const Status sent = sendSimulatorCommand(*daemons_, port->netns, command);
  // No simulator, no namespace: the lab is gone and its links with it.
  if (sent.code() == StatusCode::kFailedPrecondition) return Status::ok();
  return sent;
}

core::Result<json> IbPortFault::observe(const Fault& fault) {
  auto port = portOf(fault);
  if (!port.isOk()) return port.status();
  if (port->netns.empty()) {
    auto state = ports_->run(port->node, port->port, sys::IbPortCommandAction::kQuery);
    if (!state.isOk()) return state.status();
    return json{{"switch", state->value("switch", "")},
                {"port", state->value("port", 0)},
                {"physical_state", state->value("after", "")}};
  }
  auto pid = findSimulator(*daemons_, port->netns);
  if (!pid.isOk()) return pid.status();
  return json{{"simulator_pid", *pid}, {"node", port->node}, {"port", port->port}};
}

}  // namespace fabric_chaos::injectors
