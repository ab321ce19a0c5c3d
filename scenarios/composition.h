#pragma once
// How faults compose on one target: which part of an interface a kind holds while it is in force
// (its link state, its root qdisc) and whether two faults holding the same part may overlap. Every
// link_flap means "link down", so overlapping flaps merge into one stack whose revert restores the
// state from before the first; a root qdisc belongs to one fault at a time, so overlapping netem or
// packet_loss faults on one interface are refused before the run starts. Pure; table-tested.

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "injectors/model/kind_spec.h"
#include "scenarios/plan.h"

namespace fabric_chaos::scenarios {

using injectors::Composition;

struct KindTraits {
  std::string resource;  // what the kind holds on its target: "link_state", "root_qdisc", ...
  Composition composition = Composition::kExclusive;
  bool long_running = false;  // an emitter holds it: its health is checked while in force
};

// What the kind declares (injectors/model/kind_spec.h). Unknown kinds hold a resource of their
// own name, exclusively: the safe default.
KindTraits kindTraits(std::string_view kind);

// What a planned action's target occupies (injectors::lockKeys), scoped to where it lives:
// host-side targets by their host (each may have its own agent, and VM hosts all call their NIC
// eth0), switch ports by their namespace on the controller's machine. A traffic set has one key
// per endpoint interface, so it collides with a fault on any of them.
std::vector<std::string> targetKeys(const ResolvedTarget& target);
// The whole target as one string, in the same scope: the identity of a stack of faults.
std::string targetKey(const ResolvedTarget& target);
// "fcl-sw0/p1", "host h1 eth0", "host h1 RDMA port rxe0:1 (gid 0)".
std::string describeTarget(const ResolvedTarget& target);

// kUnprocessable naming both steps, the target and the resource when two actions of exclusive
// kinds hold one resource of one target at overlapping times (back to back is fine).
core::Status checkComposition(const std::vector<PlannedAction>& actions);

}  // namespace fabric_chaos::scenarios
