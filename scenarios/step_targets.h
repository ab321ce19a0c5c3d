#pragma once
// A step's targets, resolved by what its kind acts on (the kind's declared TargetType):
// - interface kinds: resolveTargets (scenarios/topology.h), one target per link selected;
// - traffic kinds (incast): one traffic set. The selector names the sink, which must come to one
//   host link; `sources` names the senders (absent: every other host of the fabric that has a
//   link), each through its first link. Endpoints are the hosts' NICs, so `side` does not apply.
//   Every endpoint must be reachable by one agent: a traffic fault is applied by the sink's agent.
// Pure; safe from any thread.

#include <vector>

#include "core/status.h"
#include "scenarios/model.h"
#include "scenarios/topology.h"

namespace fabric_chaos::scenarios {

// kInvalidArgument for `sources` on a kind that takes none; kUnprocessable naming the selector
// for what the fabric cannot satisfy (an unknown host, a sink that is also a source, a sink that
// is a link between switches, endpoints behind different agents).
core::Result<std::vector<ResolvedTarget>> resolveStepTargets(const FaultStep& step,
                                                             const Fabric& fabric);

}  // namespace fabric_chaos::scenarios
