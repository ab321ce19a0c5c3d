#pragma once
// Expands fault steps into timed apply/revert actions on concrete interfaces. A link_flap step
// with {down_ms, up_ms, count} becomes `count` down phases; other kinds are one phase lasting
// duration_ms. Pure; table-tested.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "scenarios/model.h"
#include "scenarios/topology.h"

namespace fabric_chaos::scenarios {

struct PlannedAction {
  int step = 0;
  int phase = 0;
  std::string kind;
  nlohmann::json params = nlohmann::json::object();
  ResolvedTarget target;
  int64_t apply_at_ms = 0;   // from the end of the baseline window
  int64_t revert_at_ms = 0;  // likewise
};

// One fault-in-force interval of a step, in ms from the end of the baseline window.
struct FaultPhase {
  int64_t apply_at_ms = 0;
  int64_t revert_at_ms = 0;
};

// The phases of `step` (which is steps[index]) without a fabric: the timing rules above, shared
// by planFaults, validateForFabric and Scenario::plannedDurationMs. kInvalidArgument naming
// steps[index].params.X or steps[index].duration_ms when the timing is malformed.
core::Result<std::vector<FaultPhase>> stepPhases(const FaultStep& step, int index);

// Actions sorted by apply_at_ms. Steps with several resolved targets get one action per target.
core::Result<std::vector<PlannedAction>> planFaults(const Scenario& scenario, const Fabric& fabric);

// The [first apply, last revert] span of each step, in ms from the end of the baseline.
struct StepSpan {
  int step = 0;
  int64_t start_ms = 0;
  int64_t end_ms = 0;
};
std::vector<StepSpan> stepSpans(const std::vector<PlannedAction>& actions);

}  // namespace fabric_chaos::scenarios
