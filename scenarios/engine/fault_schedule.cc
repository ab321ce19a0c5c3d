#include "scenarios/engine/fault_schedule.h"

#include <algorithm>

#include "scenarios/composition.h"

namespace fabric_chaos::scenarios {
namespace {

void sortInstants(std::vector<FaultInstant>::iterator begin,
                  std::vector<FaultInstant>::iterator end) {
  std::stable_sort(begin, end, [](const FaultInstant& a, const FaultInstant& b) {
    return a.at_ms != b.at_ms ? a.at_ms < b.at_ms : (!a.apply && b.apply);
  });
}

}  // namespace

std::vector<FaultInstant> faultInstants(const std::vector<PlannedAction>& plan,
                                        double baseline_end_ms) {
  std::vector<FaultInstant> instants;
  for (size_t i = 0; i < plan.size(); ++i) {
    instants.push_back({baseline_end_ms + static_cast<double>(plan[i].apply_at_ms), true, i});
    instants.push_back({baseline_end_ms + static_cast<double>(plan[i].revert_at_ms), false, i});
  }
  sortInstants(instants.begin(), instants.end());
  return instants;
}

size_t holdForPlannedLength(std::vector<FaultInstant>& instants, size_t from,
                            const std::vector<size_t>& applied,
                            const std::vector<PlannedAction>& plan, double in_force_ms) {
  size_t moved = 0;
  for (size_t i = from; i < instants.size(); ++i) {
    FaultInstant& instant = instants[i];
    if (instant.apply) continue;
    if (std::find(applied.begin(), applied.end(), instant.index) == applied.end()) continue;
    const PlannedAction& action = plan[instant.index];
    if (!kindTraits(action.kind).long_running) continue;
    const double held_until =
        in_force_ms + static_cast<double>(action.revert_at_ms - action.apply_at_ms);
    if (held_until > instant.at_ms) {
      instant.at_ms = held_until;
      ++moved;
    }
  }
  if (moved > 0) {
    sortInstants(instants.begin() + static_cast<std::ptrdiff_t>(from), instants.end());
  }
  return moved;
}

}  // namespace fabric_chaos::scenarios
