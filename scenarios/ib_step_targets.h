#pragma once
// What the InfiniBand kinds' steps act on (injectors/model/ib_fault_specs.h), on a fabric with an
// "ib" section (scenarios/ib_fabric.h):
// - sm_failover: the selector's `sm`, "master" (the highest-priority SM the fabric declares, the
//   one that is master while the subnet is healthy) or an SM's name, as a subnet_manager target
//   attached at its host in the simulated subnet's namespace;
// - the IB port kinds: the links the selector picks (host, link or labels, as for any kind), each
//   at the end `side` names, as an ib_port target: a host link's switch side is the leaf's port,
//   its host side the HCA's; a switch link's switch side is the leaf's uplink, its peer side the
//   spine's port.
// And the refusals that keep Ethernet and InfiniBand apart: an Ethernet kind on an IB fabric, an
// IB kind on an Ethernet one, an sm selector on a link kind. Pure.

#include <vector>

#include "core/status.h"
#include "scenarios/model.h"
#include "scenarios/topology.h"

namespace fabric_chaos::scenarios {

// nullopt when `kind` is neither an IB kind nor run on an IB fabric: the ordinary resolution
// applies. kUnprocessable naming the selector for an SM or link the fabric lacks;
// kInvalidArgument for a selector the kind cannot take.
std::optional<core::Result<std::vector<ResolvedTarget>>> resolveIbStepTargets(const FaultStep& step,
                                                                              const Fabric& fabric);

}  // namespace fabric_chaos::scenarios
