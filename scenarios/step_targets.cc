#include "scenarios/step_targets.h"

#include <algorithm>
#include <variant>

#include "injectors/model/kind_spec.h"
#include "scenarios/ib_step_targets.h"
#include "scenarios/process_step_targets.h"
#include "scenarios/rdma_step_targets.h"

namespace fabric_chaos::scenarios {
namespace {

using core::Status;
using core::StatusCode;

Status unprocessable(const std::string& message) {
  return Status(StatusCode::kUnprocessable, message);
}

const Link* firstLinkOf(const Fabric& fabric, const std::string& host) {
  for (const Link& link : fabric.links) {
    if (link.host == host) return &link;
  }
  return nullptr;
}

// The host's link to switch `switch_name`; nullptr when it has none.
const Link* linkOnSwitch(const Fabric& fabric, const std::string& host,
                         const std::string& switch_name) {
  for (const Link& link : fabric.links) {
    if (link.host == host && link.switch_name == switch_name) return &link;
  }
  return nullptr;
}

injectors::InterfaceTarget nicOf(const Host& host, const Link& link) {
  return injectors::InterfaceTarget{host.netns, link.nic};
}

// A traffic set's endpoints as the fabric names them, before they become interfaces.
struct Endpoint {
  const Host* host = nullptr;
  const Link* link = nullptr;
};

// Named hosts as traffic endpoints: each must exist, have a link (the one `pick` returns) and not
// be the sink. `path` names the list in messages ("sources").
core::Result<std::vector<Endpoint>> namedSenders(
    const std::vector<std::string>& names, const Fabric& fabric, const Host& sink,
    const std::string& kind, const std::function<const Link*(const Host&)>& pick,
    const std::string& where) {
  std::vector<Endpoint> out;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string path = "sources[" + std::to_string(i) + "]";
    const Host* host = fabric.findHost(names[i]);
    if (host == nullptr) {
      return unprocessable(path + ": host " + names[i] + " is not in fabric " + fabric.name);
    }
    if (host->name == sink.name) {
      return unprocessable(path + ": host " + names[i] + " is the sink; a host cannot send " +
                           kind + " traffic to itself");
    }
    const Link* link = pick(*host);
    if (link == nullptr) {
      return unprocessable(path + ": host " + names[i] + " has no link " + where);
    }
    out.push_back({host, link});
  }
  return out;
}

bool sharesTheSinksAgent(const Endpoint& sink, const std::vector<Endpoint>& sources) {
  return std::all_of(sources.begin(), sources.end(), [&](const Endpoint& source) {
    return source.host->agent == sink.host->agent;
  });
}

// One traffic set, acted on by the hosts' agent (side host: the sink's agent routes it).
ResolvedTarget wholeTrafficSet(const Endpoint& sink, const std::vector<Endpoint>& sources) {
  injectors::TrafficSetTarget set;
  set.sinks.push_back(nicOf(*sink.host, *sink.link));
  ResolvedTarget resolved;
  resolved.host = sink.host->name;
  resolved.link_id = sink.link->id;
  resolved.side = LinkSide::kHost;
  for (const Endpoint& source : sources) {
    set.sources.push_back(nicOf(*source.host, *source.link));
    resolved.other_hosts.push_back(source.host->name);
  }
  resolved.target = std::move(set);
  return resolved;
}

// The set as its agents act on it: whole when one agent reaches every endpoint; otherwise a sink
// part for the sink's agent and a sources part for each other agent (its sources in the order
// named), which sends to the address the fabric gives the sink's NIC.
core::Result<std::vector<ResolvedTarget>> trafficSetParts(const Endpoint& sink,
                                                          const std::vector<Endpoint>& sources) {
  if (sharesTheSinksAgent(sink, sources)) {
    return std::vector<ResolvedTarget>{wholeTrafficSet(sink, sources)};
  }
  std::string sink_address;
  for (const Nic& nic : sink.host->nics) {
    if (nic.name == sink.link->nic) sink_address = nic.address;
  }
  if (sink_address.empty()) {
    return unprocessable("host " + sink.host->name + "'s NIC " + sink.link->nic +
                         " has no address in the fabric description; the sources behind other "
                         "agents need it to reach the sink");
  }
  const injectors::InterfaceTarget sink_nic = nicOf(*sink.host, *sink.link);
  std::vector<ResolvedTarget> parts;
  ResolvedTarget sink_part;
  sink_part.host = sink.host->name;
  sink_part.link_id = sink.link->id;
  sink_part.side = LinkSide::kHost;
  injectors::TrafficSetTarget sink_set;
  sink_set.sinks.push_back(sink_nic);
  sink_set.part = injectors::TrafficPart::kSink;
  sink_part.target = std::move(sink_set);
  parts.push_back(std::move(sink_part));

  std::vector<std::string> agents;  // in the order their first source is named
  for (const Endpoint& source : sources) {
    if (std::find(agents.begin(), agents.end(), source.host->agent) == agents.end()) {
      agents.push_back(source.host->agent);
    }
  }
  for (const std::string& agent : agents) {
    ResolvedTarget part;
    part.side = LinkSide::kHost;
    injectors::TrafficSetTarget set;
    set.sinks.push_back(sink_nic);
    set.part = injectors::TrafficPart::kSources;
    set.sink_address = sink_address;
    for (const Endpoint& source : sources) {
      if (source.host->agent != agent) continue;
      if (part.host.empty()) {
        part.host = source.host->name;
        part.link_id = source.link->id;
      } else {
        part.other_hosts.push_back(source.host->name);
      }
      set.sources.push_back(nicOf(*source.host, *source.link));
    }
    part.target = std::move(set);
    parts.push_back(std::move(part));
  }
  return parts;
}

// The selector's links with the traffic-only fields cleared (they say nothing about links).
core::Result<std::vector<ResolvedTarget>> selectedLinks(const FaultStep& step,
                                                        const Fabric& fabric) {
  TargetSelector links = step.target;
  links.sources.clear();
  links.sink.clear();
  return resolveTargets(links, fabric);
}

// incast, and hot_spot on a host link: the selector names the sink's link; sources default to
// every other host (incast) or one host behind another switch (hot_spot).
core::Result<std::vector<ResolvedTarget>> resolveSinkSelector(
    const FaultStep& step, const Fabric& fabric, const std::vector<ResolvedTarget>& sinks) {
  const std::string what = "target " + step.target.describe();
  if (sinks.size() != 1) {
    return unprocessable(what + " selects " + std::to_string(sinks.size()) + " links; " +
                         step.kind + " has one sink");
  }
  if (!step.target.sink.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "sink: the selector itself names " + step.kind + "'s sink here");
  }
  const Link* sink_link = fabric.findLink(sinks.front().link_id);
  if (sink_link == nullptr) {
    return unprocessable(what + " is a link between switches; an " + step.kind +
                         "'s sink is a host");
  }
  const Host* sink = fabric.findHost(sink_link->host);
  if (sink == nullptr) return unprocessable(what + ": host " + sink_link->host + " is unknown");

  std::vector<std::string> names = step.target.sources;
  if (names.empty()) {
    const bool one_elephant_source = step.kind != "incast";
    for (const Host& host : fabric.hosts) {
      const Link* link = firstLinkOf(fabric, host.name);
      if (host.name == sink->name || link == nullptr) continue;
      // A hot spot's elephant comes from across the fabric when there is a far side.
      if (one_elephant_source && link->switch_name == sink_link->switch_name) continue;
      names.push_back(host.name);
      if (one_elephant_source) break;
    }
    if (names.empty() && one_elephant_source) {
      for (const Host& host : fabric.hosts) {
        if (host.name != sink->name && firstLinkOf(fabric, host.name) != nullptr) {
          names.push_back(host.name);
          break;
        }
      }
    }
    if (names.empty()) {
      return unprocessable(what + ": fabric " + fabric.name + " has no other host to send");
    }
  }
  auto sources = namedSenders(
      names, fabric, *sink, step.kind,
      [&](const Host& host) { return firstLinkOf(fabric, host.name); }, "in fabric " + fabric.name);
  if (!sources.isOk()) return sources.status();
  return trafficSetParts({sink, sink_link}, *sources);
}

// The first host cabled to switch `on` (want_on) or not cabled to it (!want_on), other than
// `except`; on the same rail as `rail` when the fabric labels rails.
const Host* firstHost(const Fabric& fabric, const std::string& on, bool want_on,
                      const std::string& except, const std::string& rail) {
  for (const Host& host : fabric.hosts) {
    if (host.name == except || firstLinkOf(fabric, host.name) == nullptr) continue;
    const bool is_on = linkOnSwitch(fabric, host.name, on) != nullptr;
    if (is_on != want_on) continue;
    if (!want_on && !rail.empty()) {
      bool on_rail = false;
      for (const Link& link : fabric.links) {
        if (link.host != host.name) continue;
        auto it = link.labels.find("rail");
        if (it != link.labels.end() && it->second == rail) on_rail = true;
      }
      if (!on_rail) continue;
    }
    return &host;
  }
  return nullptr;
}

// The host's link on the rail `rail` (any link when "" or none matches).
const Link* linkOnRail(const Fabric& fabric, const std::string& host, const std::string& rail) {
  for (const Link& link : fabric.links) {
    if (link.host != host) continue;
    auto it = link.labels.find("rail");
    if (rail.empty() || (it != link.labels.end() && it->second == rail)) return &link;
  }
  return firstLinkOf(fabric, host);
}

// hot_spot on switch links (a leaf's uplinks): each selected uplink is one path. Side switch
// loads the leaf's port up towards the spine: the sources sit on that leaf and the sink behind
// another. Side peer loads the spine's port down towards the leaf: the sink sits on the leaf and
// each source, behind another leaf, is steered at its own leaf onto its uplink to that spine.
core::Result<std::vector<ResolvedTarget>> resolveSteeredHotSpot(
    const FaultStep& step, const Fabric& fabric, const std::vector<const SwitchLink*>& uplinks) {
  const std::string what = "target " + step.target.describe();
  const std::string leaf_name = uplinks.front()->switch_name;
  for (const SwitchLink* uplink : uplinks) {
    if (uplink->switch_name != leaf_name) {
      return unprocessable(what + " selects links of switches " + leaf_name + " and " +
                           uplink->switch_name + "; a hot spot is aimed at the links of one");
    }
  }
  const Switch* leaf = fabric.findSwitch(leaf_name);
  if (leaf == nullptr) return unprocessable(what + ": switch " + leaf_name + " is unknown");
  auto rail_it = uplinks.front()->labels.find("rail");
  const std::string rail = rail_it == uplinks.front()->labels.end() ? "" : rail_it->second;
  const bool upwards = step.target.side == LinkSide::kSwitch;

  // The sink.
  const Host* sink = nullptr;
  if (!step.target.sink.empty()) {
    sink = fabric.findHost(step.target.sink);
    if (sink == nullptr) {
      return unprocessable("sink: host " + step.target.sink + " is not in fabric " + fabric.name);
    }
  } else {
    sink = upwards ? firstHost(fabric, leaf_name, false, "", rail)
                   : firstHost(fabric, leaf_name, true, "", "");
    if (sink == nullptr) {
      return unprocessable(what + ": no host " + (upwards ? "behind another switch than " : "on ") +
                           leaf_name + " to receive the hot spot");
    }
  }
  const bool sink_on_leaf = linkOnSwitch(fabric, sink->name, leaf_name) != nullptr;
  if (upwards && sink_on_leaf) {
    return unprocessable("sink: host " + sink->name + " sits on " + leaf_name +
                         " with the sources; its traffic would never cross an uplink");
  }
  if (!upwards && !sink_on_leaf) {
    return unprocessable("sink: host " + sink->name + " is not on " + leaf_name +
                         "; traffic down " + what + " goes to " + leaf_name + "'s hosts");
  }
  const Link* sink_link =
      upwards ? linkOnRail(fabric, sink->name, rail) : linkOnSwitch(fabric, sink->name, leaf_name);

  // The sources.
  std::vector<std::string> names = step.target.sources;
  if (names.empty()) {
    const Host* source = upwards ? firstHost(fabric, leaf_name, true, sink->name, "")
                                 : firstHost(fabric, leaf_name, false, sink->name, rail);
    if (source == nullptr) {
      return unprocessable(what + ": no host " + (upwards ? "on " : "behind another switch than ") +
                           leaf_name + " to send the hot spot");
    }
    names.push_back(source->name);
  }
  auto pick = [&](const Host& host) -> const Link* {
    const Link* on_leaf = linkOnSwitch(fabric, host.name, leaf_name);
    if (upwards) return on_leaf;
    return on_leaf != nullptr ? nullptr : linkOnRail(fabric, host.name, rail);
  };
  auto sources = namedSenders(names, fabric, *sink, step.kind, pick,
                              upwards ? "on " + leaf_name : "off " + leaf_name);
  if (!sources.isOk()) return sources.status();

  if (step.params.value("transport", "tcp") == "verbs") {
    return unprocessable(
        "params.transport: hot_spot pins flows to an uplink by choosing their "
        "TCP source ports; a RoCE flow's UDP source port is its NIC's choice, "
        "so verbs elephants go through a host's port only");
  }
  const Endpoint sink_endpoint{sink, sink_link};
  if (!sharesTheSinksAgent(sink_endpoint, *sources)) {
    return unprocessable(what +
                         ": the sink and the sources sit behind different agents; a hot "
                         "spot pinned to an uplink is steered by one agent, which must reach "
                         "them all");
  }
  // One path per selected uplink; one steer per source, at the leaf its flows enter the fabric.
  ResolvedTarget resolved = wholeTrafficSet(sink_endpoint, *sources);
  auto& set = std::get<injectors::TrafficSetTarget>(resolved.target);
  for (const SwitchLink* uplink : uplinks) {
    const std::string spine = uplink->peer_switch;
    const Switch* loaded = fabric.findSwitch(upwards ? leaf_name : spine);
    if (loaded == nullptr) return unprocessable(what + ": switch " + spine + " is unknown");
    injectors::TrafficPath path;
    path.port = {loaded->netns, upwards ? uplink->port : uplink->peer_port};
    for (const Endpoint& source : *sources) {
      const std::string source_leaf = source.link->switch_name;
      const SwitchLink* hop = nullptr;
      for (const SwitchLink& candidate : fabric.switch_links) {
        if (candidate.switch_name == source_leaf && candidate.peer_switch == spine) {
          hop = &candidate;
        }
      }
      const Switch* entry = fabric.findSwitch(source_leaf);
      if (hop == nullptr || entry == nullptr) {
        return unprocessable("sources: host " + source.host->name + "'s switch " + source_leaf +
                             " has no uplink to " + spine);
      }
      path.steers.push_back({entry->netns, entry->bridge, hop->port});
    }
    set.paths.push_back(std::move(path));
  }
  return std::vector<ResolvedTarget>{std::move(resolved)};
}

core::Result<std::vector<ResolvedTarget>> resolveTrafficSet(const FaultStep& step,
                                                            const Fabric& fabric) {
  const bool hot_spot = step.kind == "hot_spot";
  if (!hot_spot && !step.target.sink.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "sink: only hot_spot on a switch link takes a sink; " + step.kind +
                      "'s selector names its sink");
  }
  if (!hot_spot && step.target.side != LinkSide::kSwitch) {
    return Status(StatusCode::kInvalidArgument,
                  "side: does not apply to " + step.kind + ", whose endpoints are hosts' NICs");
  }
  auto selected = selectedLinks(step, fabric);
  if (!selected.isOk()) return selected.status();
  std::vector<const SwitchLink*> uplinks;
  for (const ResolvedTarget& target : *selected) {
    if (const SwitchLink* uplink = fabric.findSwitchLink(target.link_id)) uplinks.push_back(uplink);
  }
  if (!hot_spot || uplinks.empty()) {
    if (hot_spot && step.target.side != LinkSide::kSwitch) {
      return Status(StatusCode::kInvalidArgument,
                    "side: a hot spot on a host link loads the switch's port towards the host; "
                    "side applies to uplinks only");
    }
    return resolveSinkSelector(step, fabric, *selected);
  }
  if (uplinks.size() != selected->size()) {
    return unprocessable("target " + step.target.describe() +
                         " selects host links and links between switches; a hot spot is aimed "
                         "at one kind");
  }
  return resolveSteeredHotSpot(step, fabric, uplinks);
}

}  // namespace

core::Result<std::vector<ResolvedTarget>> resolveStepTargets(
    const FaultStep& step, const Fabric& fabric, const std::vector<std::string>& workload_hosts) {
  if (auto rdma = resolveRdmaStepTargets(step, fabric, workload_hosts)) return std::move(*rdma);
  if (auto processes = resolveProcessStepTargets(step, fabric, workload_hosts)) {
    return std::move(*processes);
  }
  if (auto ib = resolveIbStepTargets(step, fabric)) return std::move(*ib);
  const injectors::KindSpec* spec = injectors::findKindSpec(step.kind);
  if (spec != nullptr && spec->target == injectors::TargetType::kTrafficSet) {
    return resolveTrafficSet(step, fabric);
  }
  if (!step.target.sources.empty()) {
    return Status(
        StatusCode::kInvalidArgument,
        "sources: only traffic kinds (incast, hot_spot) take sources; " + step.kind + " does not");
  }
  if (!step.target.sink.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "sink: only hot_spot on a switch link takes a sink; " + step.kind + " does not");
  }
  return resolveTargets(step.target, fabric);
}

TrafficHosts trafficHostsOf(const ResolvedTarget& target) {
  TrafficHosts hosts;
  const auto* set = std::get_if<injectors::TrafficSetTarget>(&target.target);
  if (set == nullptr) return hosts;
  if (set->part == injectors::TrafficPart::kSources) {
    hosts.sources.push_back(target.host);
    hosts.sources.insert(hosts.sources.end(), target.other_hosts.begin(), target.other_hosts.end());
    return hosts;
  }
  hosts.sink = target.host;
  if (set->part == injectors::TrafficPart::kWhole) hosts.sources = target.other_hosts;
  return hosts;
}

}  // namespace fabric_chaos::scenarios
