#include "workload/ib_routes.h"

#include <algorithm>
#include <deque>
#include <map>

#include "core/clock.h"

namespace fabric_chaos::workload {
namespace {

using core::Status;
using core::StatusCode;

constexpr int kLftBlockSize = 64;

ib::RouteSwitch* findSwitch(ib::RouteMap& map, uint64_t guid) {
  for (ib::RouteSwitch& sw : map.switches) {
    if (sw.guid == guid) return &sw;
  }
  return nullptr;
}

bool knownCa(const ib::RouteMap& map, uint64_t port_guid) {
  return std::any_of(map.cas.begin(), map.cas.end(),
                     [&](const ib::RouteCa& ca) { return ca.guid == port_guid; });
}

// Every port of one switch: what answers behind each port that is not down.
Status discoverSwitch(SmpReader& smp, int timeout_ms, size_t index, ib::RouteMap& map,
                      std::deque<size_t>& queue) {
  const DirectRoute route = map.switches[index].drpaths.front();
  auto info = smp.nodeInfo(route, timeout_ms);
  if (!info.isOk()) return info.status();
  auto name = smp.nodeDescription(route, timeout_ms);
  if (!name.isOk()) return name.status();
  auto management = smp.portInfo(route, 0, timeout_ms);
  if (!management.isOk()) return management.status();
  map.switches[index].name = *name;
  map.switches[index].lid = management->lid;
  for (int port = 1; port <= info->ports; ++port) {
    auto state = smp.portInfo(route, port, timeout_ms);
    if (!state.isOk()) return state.status();
    if (state->state == IbPortState::kDown || state->state == IbPortState::kNoChange) continue;
    DirectRoute next = route;
    next.push_back(port);
    auto neighbour = smp.nodeInfo(next, timeout_ms);
    if (!neighbour.isOk()) continue;  // a port coming up: nothing answers behind it yet
    if (neighbour->is_switch) {
      map.switches[index].cabled[port] = {neighbour->node_guid, neighbour->local_port, true};
      if (findSwitch(map, neighbour->node_guid) != nullptr) continue;
      ib::RouteSwitch found;
      found.guid = neighbour->node_guid;
      found.drpaths.push_back(next);
      map.switches.push_back(std::move(found));
      queue.push_back(map.switches.size() - 1);
      continue;
    }
    // A channel adapter: its port, by port GUID (a two-port HCA is two ends, two LIDs).
    map.switches[index].cabled[port] = {neighbour->port_guid, neighbour->local_port, false};
    if (knownCa(map, neighbour->port_guid)) continue;
    auto ca_name = smp.nodeDescription(next, timeout_ms);
    if (!ca_name.isOk()) return ca_name.status();
    auto ca_port = smp.portInfo(next, neighbour->local_port, timeout_ms);
    if (!ca_port.isOk()) return ca_port.status();
    map.cas.push_back(
        {neighbour->port_guid, *ca_name, ca_port->lid, map.switches[index].guid, port});
  }
  return Status::ok();
}

// Shortest direct routes from the first switch through each of its switch ports to every switch
// reachable that way without passing the first switch again.
std::map<uint64_t, DirectRoute> routesLeavingBy(const ib::RouteMap& map, const DirectRoute& first,
                                                int port, uint64_t via) {
  const uint64_t root = map.switches.front().guid;
  std::map<uint64_t, DirectRoute> routes;
  DirectRoute start = first;
  start.push_back(port);
  routes[via] = start;
  std::deque<uint64_t> queue = {via};
  while (!queue.empty()) {
    const ib::RouteSwitch* at = map.findSwitch(queue.front());
    const DirectRoute here = routes[queue.front()];
    queue.pop_front();
    if (at == nullptr) continue;
    for (const auto& [out, neighbour] : at->cabled) {
      if (!neighbour.is_switch || neighbour.guid == root || routes.count(neighbour.guid)) continue;
      DirectRoute next = here;
      next.push_back(out);
      routes[neighbour.guid] = next;
      queue.push_back(neighbour.guid);
    }
  }
  return routes;
}

// Each switch's first route is the one the discovery found; the others leave the first switch by
// its other ports, so that one failed cable there does not hide a switch from every route.
void addDiverseRoutes(ib::RouteMap& map, const DirectRoute& first) {
  std::map<uint64_t, std::vector<DirectRoute>> candidates;
  for (const auto& [port, neighbour] : map.switches.front().cabled) {
    if (!neighbour.is_switch) continue;
    for (auto& [guid, route] : routesLeavingBy(map, first, port, neighbour.guid)) {
      candidates[guid].push_back(std::move(route));
    }
  }
  for (ib::RouteSwitch& sw : map.switches) {
    auto& found = candidates[sw.guid];
    std::stable_sort(found.begin(), found.end(), [](const DirectRoute& a, const DirectRoute& b) {
      return a.size() < b.size();
    });
    for (DirectRoute& route : found) {
      if (sw.drpaths.size() >= kRoutesPerSwitch) break;
      if (std::find(sw.drpaths.begin(), sw.drpaths.end(), route) == sw.drpaths.end()) {
        sw.drpaths.push_back(std::move(route));
      }
    }
  }
}

}  // namespace

core::Result<ib::RouteMap> discoverRoutes(SmpReader& smp, int timeout_ms) {
  auto self = smp.nodeInfo({}, timeout_ms);
  if (!self.isOk()) return self.status();
  if (self->is_switch) {
    return Status(StatusCode::kFailedPrecondition,
                  "the local port belongs to a switch: routes are read from a channel adapter");
  }
  const DirectRoute first = {self->local_port};
  auto cabled = smp.nodeInfo(first, timeout_ms);
  if (!cabled.isOk()) {
    return Status(StatusCode::kFailedPrecondition, "nothing answers behind local port " +
                                                       std::to_string(self->local_port) + ": " +
                                                       cabled.status().message());
  }
  if (!cabled->is_switch) {
    return Status(StatusCode::kFailedPrecondition,
                  "local port " + std::to_string(self->local_port) +
                      " is cabled to another channel adapter: there is no switch to read");
  }
  ib::RouteMap map;
  ib::RouteSwitch first_switch;
  first_switch.guid = cabled->node_guid;
  first_switch.drpaths.push_back(first);
  map.switches.push_back(std::move(first_switch));
  std::deque<size_t> queue = {0};
  while (!queue.empty()) {
    const size_t index = queue.front();
    queue.pop_front();
    FC_RETURN_IF_ERROR(discoverSwitch(smp, timeout_ms, index, map, queue));
  }
  if (!knownCa(map, self->port_guid)) {
    return Status(StatusCode::kFailedPrecondition,
                  "the discovery did not find the local port behind its own switch");
  }
  addDiverseRoutes(map, first);
  for (const ib::RouteCa& ca : map.cas) map.top_lid = std::max(map.top_lid, ca.lid);
  for (const ib::RouteSwitch& sw : map.switches) map.top_lid = std::max(map.top_lid, sw.lid);
  return map;
}

RouteSweep::RouteSweep(ib::RouteMap map, int timeout_ms)
    : map_(std::move(map)), timeout_ms_(timeout_ms) {
  const int blocks = map_.top_lid / kLftBlockSize + 1;
  for (size_t i = 0; i < map_.switches.size(); ++i) {
    for (int block = 0; block < blocks; ++block) reads_.push_back({i, block, 0});
    for (const auto& [port, neighbour] : map_.switches[i].cabled) reads_.push_back({i, -1, port});
  }
  route_choice_.assign(map_.switches.size(), 0);
  unreadable_.assign(map_.switches.size(), false);
}

bool RouteSweep::readOne(SmpReader& smp, const Read& read, int timeout_ms) {
  const ib::RouteSwitch& sw = map_.switches[read.switch_index];
  const DirectRoute& route = sw.drpaths[route_choice_[read.switch_index]];
  ib::SwitchReading& out = reading_[sw.guid];
  if (read.lft_block >= 0) {
    auto block = smp.lftBlock(route, read.lft_block, timeout_ms);
    if (!block.isOk()) return false;
    out.lft.resize(static_cast<size_t>(map_.top_lid) + 1, ib::kLftUnassigned);
    for (int i = 0; i < kLftBlockSize; ++i) {
      const size_t lid = static_cast<size_t>(read.lft_block) * kLftBlockSize + i;
      if (lid < out.lft.size()) out.lft[lid] = (*block)[static_cast<size_t>(i)];
    }
    return true;
  }
  auto state = smp.portInfo(route, read.port, timeout_ms);
  if (!state.isOk()) return false;
  out.port_active[read.port] = state->state == IbPortState::kActive;
  return true;
}

std::optional<RouteSweep::Pass> RouteSweep::advance(SmpReader& smp, int64_t deadline_ns) {
  if (next_ == 0 && pass_start_ns_ == 0) {
    pass_start_ns_ = core::steadyNowNs();
    reading_.clear();
    unreadable_.assign(map_.switches.size(), false);
  }
  while (next_ < reads_.size()) {
    const Read read = reads_[next_];
    if (unreadable_[read.switch_index]) {
      ++next_;
      continue;
    }
    const int64_t now_ns = core::steadyNowNs();
    if (now_ns + last_read_ns_ >= deadline_ns) return std::nullopt;
    const int timeout_ms =
        static_cast<int>(std::clamp<int64_t>((deadline_ns - now_ns) / 1'000'000, 1, timeout_ms_));
    const ib::RouteSwitch& sw = map_.switches[read.switch_index];
    bool answered = false;
    // Each of the switch's direct routes in turn, from the one that answered last.
    for (size_t tried = 0; tried < sw.drpaths.size() && !answered; ++tried) {
      answered = readOne(smp, read, timeout_ms);
      if (!answered) {
        route_choice_[read.switch_index] =
            (route_choice_[read.switch_index] + 1) % sw.drpaths.size();
      }
    }
    // What an answered read costs decides whether the next fits before the deadline; a timed-out
    // one says nothing about that.
    if (answered) last_read_ns_ = core::steadyNowNs() - now_ns;
    if (!answered) {
      unreadable_[read.switch_index] = true;
      reading_.erase(sw.guid);
    }
    ++next_;
  }
  Pass pass{std::move(reading_), core::steadyNowNs() - pass_start_ns_};
  reading_.clear();
  next_ = 0;
  pass_start_ns_ = 0;
  return pass;
}

}  // namespace fabric_chaos::workload
