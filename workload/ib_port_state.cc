#include "workload/ib_port_state.h"

#include <cinttypes>
#include <cstdio>
#include <vector>

#include "workload/ib_routes.h"

namespace fabric_chaos::workload {
namespace {

using core::Status;
using core::StatusCode;

// The port by which a direct route enters its last switch: a Set through the very port it
// disables would lose its own answer.
int entryPort(const ib::RouteMap& map, const ib::RouteCa& self, const DirectRoute& route) {
  int entered = self.switch_port;
  uint64_t at = self.switch_guid;
  for (size_t hop = 1; hop < route.size(); ++hop) {
    const ib::RouteSwitch* sw = map.findSwitch(at);
    if (sw == nullptr) return 0;
    const auto cable = sw->cabled.find(route[hop]);
    if (cable == sw->cabled.end()) return 0;
    at = cable->second.guid;
    entered = cable->second.port;
  }
  return entered;
}

std::string routeText(const DirectRoute& route) {
  std::string text = "0";
  for (int hop : route) text += "," + std::to_string(hop);
  return text;
}

}  // namespace

core::Result<IbPortOutcome> actOnPort(SmpReader& smp, SmpPortControl& control,
                                      const std::string& node, int port, IbPortAction action,
                                      int timeout_ms) {
  auto map = discoverRoutes(smp, timeout_ms);
  if (!map.isOk()) return map.status();
  auto self = smp.nodeInfo({}, timeout_ms);
  if (!self.isOk()) return self.status();
  const ib::RouteSwitch* target = nullptr;
  int target_port = port;
  for (const ib::RouteSwitch& sw : map->switches) {
    if (sw.name == node) target = &sw;
  }
  if (target == nullptr) {
    for (const ib::RouteCa& ca : map->cas) {
      if (ca.name != node) continue;
      target = map->findSwitch(ca.switch_guid);
      target_port = ca.switch_port;
    }
  }
  if (target == nullptr) {
    return Status(StatusCode::kNotFound,
                  "no switch or channel adapter named \"" + node +
                      "\" answered the discovery from this node (a channel adapter whose cable is "
                      "down cannot be found: name the switch and its port instead)");
  }
  const ib::RouteCa* local = nullptr;
  for (const ib::RouteCa& ca : map->cas) {
    if (ca.guid == self->port_guid) local = &ca;
  }
  if (local == nullptr) {
    return Status(StatusCode::kFailedPrecondition, "the discovery did not find the local port");
  }
  // The local port's own cable: disabling it would leave nothing that could enable it again.
  if (action == IbPortAction::kDisable && local->switch_guid == target->guid &&
      local->switch_port == target_port) {
    return Status(StatusCode::kFailedPrecondition,
                  target->name + " port " + std::to_string(target_port) +
                      " is the cable of the node sending the MADs: it could not be enabled again "
                      "from here; act from another node");
  }
  // Routes that enter the switch by another port first; a Set that disables the port it came in
  // by would lose its answer, so a disable takes none of those.
  std::vector<DirectRoute> routes;
  std::vector<DirectRoute> through_target;
  for (const DirectRoute& route : target->drpaths) {
    (entryPort(*map, *local, route) != target_port ? routes : through_target).push_back(route);
  }
  if (action != IbPortAction::kDisable) {
    routes.insert(routes.end(), through_target.begin(), through_target.end());
  }
  if (routes.empty()) {
    return Status(StatusCode::kFailedPrecondition,
                  "every direct route from this node to " + target->name + " enters it by port " +
                      std::to_string(target_port) + ", the port to act on: act from another node");
  }
  Status last = Status(StatusCode::kTimeout, "no direct route to " + target->name);
  for (const DirectRoute& route : routes) {
    auto before = smp.portInfo(route, target_port, timeout_ms);
    if (!before.isOk()) {
      last = before.status();
      continue;
    }
    IbPortOutcome outcome;
    outcome.switch_name = target->name;
    outcome.switch_guid = target->guid;
    outcome.port = target_port;
    outcome.route = route;
    outcome.before = before->physical;
    outcome.after = before->physical;
    if (action != IbPortAction::kQuery) {
      const IbPhysicalState wanted =
          action == IbPortAction::kDisable ? IbPhysicalState::kDisabled : IbPhysicalState::kPolling;
      FC_RETURN_IF_ERROR(control.setPhysicalState(route, target_port, wanted, timeout_ms));
      auto after = smp.portInfo(route, target_port, timeout_ms);
      if (after.isOk()) outcome.after = after->physical;
    }
    return outcome;
  }
  return Status(StatusCode::kTimeout, target->name + " answers on none of its " +
                                          std::to_string(target->drpaths.size()) +
                                          " direct routes: " + last.message());
}

nlohmann::json toJson(const IbPortOutcome& outcome) {
  char guid[24];
  std::snprintf(guid, sizeof(guid), "0x%016" PRIx64, outcome.switch_guid);
  return {{"switch", outcome.switch_name},
          {"guid", guid},
          {"port", outcome.port},
          {"route", routeText(outcome.route)},
          {"before", describe(outcome.before)},
          {"after", describe(outcome.after)}};
}

}  // namespace fabric_chaos::workload
