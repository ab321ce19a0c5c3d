#include "scenarios/plan.h"

#include <algorithm>
#include <map>
#include <optional>

namespace fabric_chaos::scenarios {
namespace {

using core::Status;
using core::StatusCode;
using nlohmann::json;

constexpr int64_t kMaxFlapPhaseMs = 600000;
constexpr int64_t kMaxFlapCount = 1000;

Status invalid(const std::string& path, const std::string& what) {
  return Status(StatusCode::kInvalidArgument, path + ": " + what);
}

// An optional integer parameter in [lo, hi]; `out` keeps its default when absent.
Status flapParam(const json& params, const std::string& prefix, const char* key, int64_t lo,
                 int64_t hi, std::optional<int64_t>& out) {
  auto it = params.find(key);
  if (it == params.end()) return Status::ok();
  const std::string path = prefix + ".params." + key;
  const std::string expected =
      "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (it->is_number_unsigned()) {
    if (it->get<uint64_t>() > static_cast<uint64_t>(hi)) return invalid(path, expected);
  } else if (!it->is_number_integer()) {
    return invalid(path, expected);
  }
  const int64_t v = it->get<int64_t>();
  if (v < lo || v > hi) return invalid(path, expected);
  out = v;
  return Status::ok();
}

Status checkTime(const std::string& path, int64_t v) {
  if (v < 0) return invalid(path, "must be a non-negative integer");
  if (v > kMaxTimeMs) return invalid(path, "must be at most " + std::to_string(kMaxTimeMs));
  return Status::ok();
}

}  // namespace

core::Result<std::vector<FaultPhase>> stepPhases(const FaultStep& step, int index) {
  const std::string prefix = "steps[" + std::to_string(index) + "]";
  FC_RETURN_IF_ERROR(checkTime(prefix + ".at_ms", step.at_ms));
  FC_RETURN_IF_ERROR(checkTime(prefix + ".duration_ms", step.duration_ms));
  std::vector<FaultPhase> phases;

  if (step.kind != "link_flap") {
    if (step.duration_ms <= 0) {
      return invalid(prefix + ".duration_ms", "must be > 0 for " + step.kind);
    }
    phases.push_back({step.at_ms, step.at_ms + step.duration_ms});
    return phases;
  }

  // link_flap: `count` down phases of down_ms, separated by up_ms of link up.
  if (!step.params.is_object()) return invalid(prefix + ".params", "must be an object");
  std::optional<int64_t> down, up, count;
  FC_RETURN_IF_ERROR(flapParam(step.params, prefix, "down_ms", 1, kMaxFlapPhaseMs, down));
  FC_RETURN_IF_ERROR(flapParam(step.params, prefix, "up_ms", 1, kMaxFlapPhaseMs, up));
  FC_RETURN_IF_ERROR(flapParam(step.params, prefix, "count", 1, kMaxFlapCount, count));
  if (!down) return invalid(prefix + ".params.down_ms", "required for link_flap");
  const int64_t down_ms = *down;
  const int64_t up_ms = up.value_or(down_ms);
  const int64_t n = count.value_or(1);
  // At most 1000 * 1.2e6 ms: no overflow.
  const int64_t pattern_ms = n * down_ms + (n - 1) * up_ms;
  if (step.duration_ms > 0 && step.duration_ms != pattern_ms) {
    return invalid(prefix + ".duration_ms",
                   std::to_string(step.duration_ms) +
                       " does not match the link_flap pattern: count*down_ms + "
                       "(count-1)*up_ms = " +
                       std::to_string(pattern_ms) + "; omit duration_ms to derive it");
  }
  phases.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t apply = step.at_ms + i * (down_ms + up_ms);
    phases.push_back({apply, apply + down_ms});
  }
  return phases;
}

core::Result<std::vector<PlannedAction>> planFaults(const Scenario& scenario,
                                                    const Fabric& fabric) {
  std::vector<PlannedAction> actions;
  for (size_t i = 0; i < scenario.steps.size(); ++i) {
    const FaultStep& step = scenario.steps[i];
    const int index = static_cast<int>(i);
    auto phases = stepPhases(step, index);
    if (!phases.isOk()) return phases.status();
    auto targets = resolveTargets(step.target, fabric);
    if (!targets.isOk()) {
      return targets.status().withContext("steps[" + std::to_string(i) + "].target");
    }
    for (size_t p = 0; p < phases->size(); ++p) {
      for (const ResolvedTarget& target : *targets) {
        PlannedAction action;
        action.step = index;
        action.phase = static_cast<int>(p);
        action.kind = step.kind;
        action.params = step.params;
        action.target = target;
        action.apply_at_ms = (*phases)[p].apply_at_ms;
        action.revert_at_ms = (*phases)[p].revert_at_ms;
        actions.push_back(std::move(action));
      }
    }
  }
  // Stable: within one step, phases and targets keep their order.
  std::stable_sort(actions.begin(), actions.end(),
                   [](const PlannedAction& a, const PlannedAction& b) {
                     if (a.apply_at_ms != b.apply_at_ms) return a.apply_at_ms < b.apply_at_ms;
                     return a.step < b.step;
                   });
  return actions;
}

std::vector<StepSpan> stepSpans(const std::vector<PlannedAction>& actions) {
  std::map<int, StepSpan> spans;
  for (const PlannedAction& action : actions) {
    auto [it, inserted] = spans.try_emplace(
        action.step, StepSpan{action.step, action.apply_at_ms, action.revert_at_ms});
    if (!inserted) {
      it->second.start_ms = std::min(it->second.start_ms, action.apply_at_ms);
      it->second.end_ms = std::max(it->second.end_ms, action.revert_at_ms);
    }
  }
  std::vector<StepSpan> out;
  out.reserve(spans.size());
  for (const auto& [step, span] : spans) out.push_back(span);
  return out;
}

}  // namespace fabric_chaos::scenarios
