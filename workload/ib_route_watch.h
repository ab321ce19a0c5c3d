#pragma once
// Turns the IB probe's route readings (workload/ib_routes.h) into the events a run stores:
//   routes_checked  {"switches", "channel_adapters", "pairs", "entries", "pass_ms"} the first pass:
//                   what is watched, and how often a pass completes (the figures' resolution)
//   routes_broken   {"unroutable", "pairs", "problem"} a pass found pairs whose LFT walk does not
//                   arrive, after one where every pair did
//   routes_restored {"after_ms"} the first pass where every pair arrives again
//   lft_changed     {"entries", "of", "from_first"} a pass read entries that differ from the pass
//                   before (from_first: how many now differ from the first pass)
// Pairs that meet an unreadable switch neither break nor restore. Pure.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ib/lft_routes.h"

namespace fabric_chaos::workload {

inline constexpr char kEventRoutesChecked[] = "routes_checked";
inline constexpr char kEventRoutesBroken[] = "routes_broken";
inline constexpr char kEventRoutesRestored[] = "routes_restored";
inline constexpr char kEventLftChanged[] = "lft_changed";

struct RouteEvent {
  std::string kind;
  nlohmann::json detail;
};

class RouteWatch {
 public:
  explicit RouteWatch(const ib::RouteMap& map) : map_(map) {}
  // A finished pass, at `now_ns` (steady clock), that took `pass_ns`.
  std::vector<RouteEvent> onPass(const ib::RouteReading& reading, int64_t now_ns, int64_t pass_ns);

 private:
  ib::RouteMap map_;
  std::optional<ib::RouteReading> first_;
  ib::RouteReading previous_;
  std::optional<int64_t> broken_since_ns_;
};

}  // namespace fabric_chaos::workload
