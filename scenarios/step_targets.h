#pragma once
// A step's targets, resolved by what its kind acts on (the kind's declared TargetType):
// - interface kinds: resolveTargets (scenarios/topology.h), one target per link selected;
// - traffic kinds: one traffic set, applied by the hosts' agent (side host). When its endpoints
//   sit behind different agents it is cut into parts (injectors::TrafficPart): the sink alone for
//   the sink's agent, and the sources each other agent reaches, which send to the sink NIC's
//   address from the fabric description.
//   - incast, and hot_spot on a host link: the selector names the sink, which must come to one
//     host link; `sources` names the senders, each through its first link (absent: incast every
//     other host, hot_spot one host behind another switch when there is one). `side` does not
//     apply.
//   - hot_spot on switch links (one leaf's uplinks, by link id or labels): each uplink is a path
//     the injector may pin the elephants to. side "switch" loads the leaf's port up to the spine:
//     sources on that leaf (default its first host), the sink behind another leaf (`sink`,
//     default the first such host on the same rail). side "peer" loads the spine's port down to
//     the leaf: the sink on the leaf, sources behind other leaves, each steered at its own leaf
//     onto its uplink to that spine.
// Pure; safe from any thread.

#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "scenarios/model.h"
#include "scenarios/topology.h"

namespace fabric_chaos::scenarios {

// kInvalidArgument for `sources` or `sink` on a kind that takes none; kUnprocessable naming the
// selector or the field for what the fabric cannot satisfy (an unknown host, a sink that is also
// a source, an incast sink that is a link between switches, uplinks of several leaves, a source
// or sink on the wrong side of the uplink, a sink NIC without an address when parts need it, a
// pinned hot spot whose endpoints sit behind different agents or that asks for verbs).
// `workload_hosts`: the scenario's workload.hosts, which a process kind's `rank` selector reads
// (scenarios/process_step_targets.h).
core::Result<std::vector<ResolvedTarget>> resolveStepTargets(
    const FaultStep& step, const Fabric& fabric,
    const std::vector<std::string>& workload_hosts = {});

// The fabric hosts of a resolved traffic target, as the parts above lay them out: sources in the
// order of its traffic set's sources (a sources part: host, then other_hosts; a whole set:
// other_hosts), and the sink ("" for a sources part; host otherwise). Empty for other targets.
struct TrafficHosts {
  std::vector<std::string> sources;
  std::string sink;
};
TrafficHosts trafficHostsOf(const ResolvedTarget& target);

}  // namespace fabric_chaos::scenarios
