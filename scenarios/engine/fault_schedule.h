#pragma once
// When a run's faults go on and come off: each planned action's apply and revert as instants in
// run time, in order (reverts first at equal times, so that back-to-back phases on one interface
// never overlap). A long-running fault (an emitter: pfc_storm, incast, hot_spot) is in force once
// its processes run, which on a slow host (a TCG guest) can be seconds after its planned
// instant: its revert then moves so that it still holds for its planned length. Pure.

#include <cstddef>
#include <vector>

#include "scenarios/plan.h"

namespace fabric_chaos::scenarios {

struct FaultInstant {
  double at_ms = 0;  // run time
  bool apply = true;
  size_t index = 0;  // into the plan
};

std::vector<FaultInstant> faultInstants(const std::vector<PlannedAction>& plan,
                                        double baseline_end_ms);

// The actions `applied` (a group of instant `instants[from - 1]`) came into force at
// in_force_ms. The reverts of the long-running ones among instants[from..] move to at least
// in_force_ms + their planned length; instants[from..] are sorted again. Returns how many moved.
size_t holdForPlannedLength(std::vector<FaultInstant>& instants, size_t from,
                            const std::vector<size_t>& applied,
                            const std::vector<PlannedAction>& plan, double in_force_ms);

}  // namespace fabric_chaos::scenarios
