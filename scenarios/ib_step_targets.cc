#include "scenarios/ib_step_targets.h"

#include <algorithm>

#include "injectors/model/kind_spec.h"

namespace fabric_chaos::scenarios {
namespace {

using core::Status;
using core::StatusCode;
using injectors::TargetType;

Status unprocessable(const std::string& message) {
  return Status(StatusCode::kUnprocessable, message);
}

std::string simulatorNetns(const Fabric& fabric) {
  return fabric.ib->simulator ? fabric.ib->simulator->netns : "";
}

std::string smNames(const IbFabric& ib) {
  std::string names;
  for (const SubnetManagerInstance& sm : ib.subnet_managers) {
    names += (names.empty() ? "" : ", ") + sm.name;
  }
  return names.empty() ? "none" : names;
}

core::Result<std::vector<ResolvedTarget>> resolveSubnetManager(const FaultStep& step,
                                                               const Fabric& fabric) {
  if (step.target.sm.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "target: " + step.kind +
                      " acts on a subnet manager: name it with \"sm\": \"master\" or an SM's "
                      "name");
  }
  const IbFabric& ib = *fabric.ib;
  const SubnetManagerInstance* chosen = nullptr;
  if (step.target.sm == "master") {
    for (const SubnetManagerInstance& sm : ib.subnet_managers) {
      if (chosen == nullptr || sm.priority > chosen->priority) chosen = &sm;
    }
  } else {
    chosen = ib.findSubnetManager(step.target.sm);
  }
  if (chosen == nullptr) {
    return unprocessable("target sm " + step.target.sm + " is not in fabric " + fabric.name +
                         " (its subnet managers: " + smNames(ib) + ")");
  }
  ResolvedTarget resolved;
  resolved.host = chosen->host;
  resolved.target = injectors::SubnetManagerTarget{"", chosen->host, simulatorNetns(fabric)};
  return std::vector<ResolvedTarget>{resolved};
}

// A port name of an IB fabric ("3", or an HCA's "port1") as its number.
std::optional<int> portNumber(const std::string& name) {
  const size_t digits = name.find_first_of("0123456789");
  if (digits == std::string::npos) return std::nullopt;
  try {
    return std::stoi(name.substr(digits));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

core::Result<std::vector<ResolvedTarget>> resolveIbPorts(const FaultStep& step,
                                                         const Fabric& fabric) {
  auto links = resolveTargets(step.target, fabric);
  if (!links.isOk()) return links.status();
  std::vector<ResolvedTarget> out;
  for (const ResolvedTarget& link : *links) {
    std::string node;
    std::string port;
    if (const Link* host_link = fabric.findLink(link.link_id)) {
      const bool host_side = link.side == LinkSide::kHost;
      node = host_side ? host_link->host : host_link->switch_name;
      port = host_side ? host_link->nic : host_link->port;
    } else if (const SwitchLink* switch_link = fabric.findSwitchLink(link.link_id)) {
      const bool peer = link.side == LinkSide::kPeer;
      node = peer ? switch_link->peer_switch : switch_link->switch_name;
      port = peer ? switch_link->peer_port : switch_link->port;
    } else {
      return unprocessable("target " + step.target.describe() + " selects no cable of fabric " +
                           fabric.name);
    }
    const std::optional<int> number = portNumber(port);
    if (!number) {
      return unprocessable("target " + step.target.describe() + ": port \"" + port + "\" of " +
                           node + " is not an IB port number");
    }
    ResolvedTarget resolved = link;
    resolved.target = injectors::IbPortTarget{node, *number, simulatorNetns(fabric)};
    out.push_back(std::move(resolved));
  }
  return out;
}

}  // namespace

std::optional<core::Result<std::vector<ResolvedTarget>>> resolveIbStepTargets(
    const FaultStep& step, const Fabric& fabric) {
  const injectors::KindSpec* spec = injectors::findKindSpec(step.kind);
  const bool ib_kind = spec != nullptr && (spec->target == TargetType::kSubnetManager ||
                                           spec->target == TargetType::kIbPort);
  if (!ib_kind) {
    if (!step.target.sm.empty()) {
      return core::Result<std::vector<ResolvedTarget>>(
          Status(StatusCode::kInvalidArgument,
                 "sm: only sm_failover acts on a subnet manager; " + step.kind + " does not"));
    }
    if (fabric.ib && spec != nullptr) {
      return core::Result<std::vector<ResolvedTarget>>(unprocessable(
          step.kind + " acts on Ethernet; fabric " + fabric.name +
          " is an InfiniBand subnet (its kinds: sm_failover, ib_link_down, ib_link_flap, "
          "ib_mad_loss)"));
    }
    return std::nullopt;
  }
  if (!fabric.ib) {
    return core::Result<std::vector<ResolvedTarget>>(
        unprocessable(step.kind + " acts on an InfiniBand subnet; fabric " + fabric.name +
                      " is not one (bring one up with `fabric-chaos lab up --kind ib`)"));
  }
  if (spec->target == TargetType::kSubnetManager) return resolveSubnetManager(step, fabric);
  if (!step.target.sm.empty()) {
    return core::Result<std::vector<ResolvedTarget>>(
        Status(StatusCode::kInvalidArgument,
               "sm: " + step.kind + " acts on a cable; name it with host, link or labels"));
  }
  return resolveIbPorts(step, fabric);
}

}  // namespace fabric_chaos::scenarios
