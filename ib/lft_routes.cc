#include "ib/lft_routes.h"

#include <set>

namespace fabric_chaos::ib {
namespace {

// More hops than any two-tier or three-tier fat tree has: a walk this long is a loop.
constexpr int kMaxHops = 64;

enum class Walk { kArrives, kBroken, kUnknown };

struct WalkResult {
  Walk walk = Walk::kArrives;
  std::string problem;
};

WalkResult walk(const RouteMap& map, const RouteReading& reading, const RouteCa& from,
                const RouteCa& to) {
  uint64_t at = from.switch_guid;
  std::set<uint64_t> seen;
  for (int hop = 0; hop < kMaxHops; ++hop) {
    const RouteSwitch* sw = map.findSwitch(at);
    if (sw == nullptr) return {Walk::kUnknown, "a switch the discovery did not see"};
    const auto read = reading.find(at);
    if (read == reading.end()) return {Walk::kUnknown, sw->name + " could not be read"};
    if (!seen.insert(at).second) {
      return {Walk::kBroken, "LID " + std::to_string(to.lid) + " loops back to " + sw->name};
    }
    const std::vector<uint8_t>& lft = read->second.lft;
    const int out = to.lid < lft.size() ? lft[to.lid] : kLftUnassigned;
    const std::string sends = sw->name + " sends LID " + std::to_string(to.lid);
    if (out == kLftUnassigned || out == kLftManagementPort) {
      return {Walk::kBroken, sends + (out == kLftUnassigned ? " nowhere (unassigned)"
                                                            : " to its own management port")};
    }
    const auto cable = sw->cabled.find(out);
    if (cable == sw->cabled.end()) {
      return {Walk::kBroken,
              sends + " out of port " + std::to_string(out) + ", which has no cable"};
    }
    const auto state = read->second.port_active.find(out);
    if (state == read->second.port_active.end()) {
      return {Walk::kUnknown, sw->name + " port " + std::to_string(out) + " could not be read"};
    }
    if (!state->second) {
      return {Walk::kBroken,
              sends + " out of port " + std::to_string(out) + ", which is not active"};
    }
    const RouteNeighbor& next = cable->second;
    if (!next.is_switch) {
      if (next.guid == to.guid) return {};
      return {Walk::kBroken,
              sends + " out of port " + std::to_string(out) + " to another channel adapter"};
    }
    at = next.guid;
  }
  return {Walk::kBroken, "LID " + std::to_string(to.lid) + " takes more than 64 hops"};
}

}  // namespace

const RouteSwitch* RouteMap::findSwitch(uint64_t guid) const {
  for (const RouteSwitch& sw : switches) {
    if (sw.guid == guid) return &sw;
  }
  return nullptr;
}

RouteVerdict checkRoutes(const RouteMap& map, const RouteReading& reading) {
  RouteVerdict verdict;
  for (const RouteCa& from : map.cas) {
    for (const RouteCa& to : map.cas) {
      if (from.guid == to.guid) continue;
      ++verdict.pairs;
      const WalkResult result = walk(map, reading, from, to);
      if (result.walk == Walk::kArrives) continue;
      if (result.walk == Walk::kUnknown) {
        ++verdict.unknown;
        continue;
      }
      ++verdict.unroutable;
      if (verdict.first_problem.empty()) {
        verdict.first_problem = from.name + " -> " + to.name + ": " + result.problem;
      }
    }
  }
  return verdict;
}

LftDifference lftDifference(const RouteMap& map, const RouteReading& before,
                            const RouteReading& after) {
  std::vector<uint16_t> lids;
  for (const RouteCa& ca : map.cas) lids.push_back(ca.lid);
  for (const RouteSwitch& sw : map.switches) {
    if (sw.lid != 0) lids.push_back(sw.lid);
  }
  LftDifference difference;
  for (const RouteSwitch& sw : map.switches) {
    const auto a = before.find(sw.guid);
    const auto b = after.find(sw.guid);
    if (a == before.end() || b == after.end()) continue;
    for (uint16_t lid : lids) {
      if (lid >= a->second.lft.size() || lid >= b->second.lft.size()) continue;
      ++difference.compared;
      if (a->second.lft[lid] != b->second.lft[lid]) ++difference.changed;
    }
  }
  return difference;
}

}  // namespace fabric_chaos::ib
