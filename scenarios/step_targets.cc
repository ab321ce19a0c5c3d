#include "scenarios/step_targets.h"

#include "injectors/model/kind_spec.h"

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

injectors::InterfaceTarget nicOf(const Host& host, const Link& link) {
  return injectors::InterfaceTarget{host.netns, link.nic};
}

core::Result<std::vector<ResolvedTarget>> resolveTrafficSet(const FaultStep& step,
                                                            const Fabric& fabric) {
  if (step.target.side != LinkSide::kSwitch) {
    return Status(StatusCode::kInvalidArgument,
                  "side: does not apply to " + step.kind + ", whose endpoints are hosts' NICs");
  }
  TargetSelector sink_selector = step.target;
  sink_selector.sources.clear();
  auto sinks = resolveTargets(sink_selector, fabric);
  if (!sinks.isOk()) return sinks.status();
  const std::string what = "target " + sink_selector.describe();
  if (sinks->size() != 1) {
    return unprocessable(what + " selects " + std::to_string(sinks->size()) + " links; an " +
                         step.kind + " has one sink");
  }
  const Link* sink_link = fabric.findLink(sinks->front().link_id);
  if (sink_link == nullptr) {
    return unprocessable(what + " is a link between switches; an " + step.kind +
                         "'s sink is a host");
  }
  const Host* sink = fabric.findHost(sink_link->host);
  if (sink == nullptr) return unprocessable(what + ": host " + sink_link->host + " is unknown");

  std::vector<std::string> names = step.target.sources;
  if (names.empty()) {
    for (const Host& host : fabric.hosts) {
      if (host.name != sink->name && firstLinkOf(fabric, host.name) != nullptr) {
        names.push_back(host.name);
      }
    }
    if (names.empty()) {
      return unprocessable(what + ": fabric " + fabric.name + " has no other host to send");
    }
  }
  injectors::TrafficSetTarget set;
  set.sinks.push_back(nicOf(*sink, *sink_link));
  ResolvedTarget resolved;
  resolved.host = sink->name;
  resolved.link_id = sink_link->id;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string path = "sources[" + std::to_string(i) + "]";
    const Host* host = fabric.findHost(names[i]);
    if (host == nullptr) {
      return unprocessable(path + ": host " + names[i] + " is not in fabric " + fabric.name);
    }
    if (host->name == sink->name) {
      return unprocessable(path + ": host " + names[i] +
                           " is the sink; a host cannot send an incast to itself");
    }
    const Link* link = firstLinkOf(fabric, host->name);
    if (link == nullptr) {
      return unprocessable(path + ": host " + names[i] + " has no link in fabric " + fabric.name);
    }
    if (host->agent != sink->agent) {
      return unprocessable(path + ": host " + names[i] + " is reached through agent " +
                           host->agent + " and the sink " + sink->name + " through " + sink->agent +
                           "; the hosts of a traffic set must share one agent");
    }
    set.sources.push_back(nicOf(*host, *link));
    resolved.other_hosts.push_back(host->name);
  }
  resolved.target = std::move(set);
  return std::vector<ResolvedTarget>{std::move(resolved)};
}

}  // namespace

core::Result<std::vector<ResolvedTarget>> resolveStepTargets(const FaultStep& step,
                                                             const Fabric& fabric) {
  const injectors::KindSpec* spec = injectors::findKindSpec(step.kind);
  if (spec != nullptr && spec->target == injectors::TargetType::kTrafficSet) {
    return resolveTrafficSet(step, fabric);
  }
  if (!step.target.sources.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "sources: only traffic kinds (incast) take sources; " + step.kind + " does not");
  }
  return resolveTargets(step.target, fabric);
}

}  // namespace fabric_chaos::scenarios
