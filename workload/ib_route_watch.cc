#include "workload/ib_route_watch.h"

namespace fabric_chaos::workload {

std::vector<RouteEvent> RouteWatch::onPass(const ib::RouteReading& reading, int64_t now_ns,
                                           int64_t pass_ns) {
  std::vector<RouteEvent> events;
  const ib::RouteVerdict verdict = ib::checkRoutes(map_, reading);
  if (!first_) {
    first_ = reading;
    events.push_back({kEventRoutesChecked,
                      {{"switches", map_.switches.size()},
                       {"channel_adapters", map_.cas.size()},
                       {"pairs", verdict.pairs},
                       {"entries", ib::lftDifference(map_, reading, reading).compared},
                       {"pass_ms", static_cast<double>(pass_ns) / 1e6}}});
  } else {
    const ib::LftDifference since_last = ib::lftDifference(map_, previous_, reading);
    if (since_last.changed > 0) {
      events.push_back({kEventLftChanged,
                        {{"entries", since_last.changed},
                         {"of", since_last.compared},
                         {"from_first", ib::lftDifference(map_, *first_, reading).changed}}});
    }
  }
  // A switch unread in this pass keeps its previous entries for the next comparison.
  for (const auto& [guid, switch_reading] : reading) previous_[guid] = switch_reading;
  if (verdict.unroutable > 0 && !broken_since_ns_) {
    broken_since_ns_ = now_ns;
    events.push_back({kEventRoutesBroken,
                      {{"unroutable", verdict.unroutable},
                       {"pairs", verdict.pairs},
                       {"problem", verdict.first_problem}}});
  } else if (verdict.unroutable == 0 && verdict.unknown == 0 && broken_since_ns_) {
    events.push_back({kEventRoutesRestored,
                      {{"after_ms", static_cast<double>(now_ns - *broken_since_ns_) / 1e6}}});
    broken_since_ns_.reset();
  }
  return events;
}

}  // namespace fabric_chaos::workload
