#include "scenarios/plan.h"

#include <algorithm>
#include <map>
#include <optional>

#include "injectors/model/kind_spec.h"
#include "scenarios/step_targets.h"

namespace fabric_chaos::scenarios {
namespace {

using core::Status;
using core::StatusCode;
using nlohmann::json;

// The shortest phase the engine can honour: a netlink change, a remote agent's round trip and a
// timer wake-up each take up to a few ms on a loaded machine, so a 1-5 ms phase would be mostly
// error. bench/inject_bench measures what 10 ms phases come out as.
constexpr int64_t kMinPhaseMs = 10;

// A missing parameter or a wrong shape (400).
Status invalid(const std::string& path, const std::string& what) {
  return Status(StatusCode::kInvalidArgument, path + ": " + what);
}

// Well-formed timing the engine cannot run: out of range, too short, inconsistent (422).
Status unrunnable(const std::string& path, const std::string& what) {
  return Status(StatusCode::kUnprocessable, path + ": " + what);
}

// A timing parameter of a repeated pattern, checked against the kind's own declaration of it;
// `out` keeps its default when absent.
Status patternParam(const injectors::KindSpec& spec, const json& params, const std::string& prefix,
                    const std::string& name, std::optional<int64_t>& out) {
  const std::string path = prefix + ".params." + name;
  auto it = params.find(name);
  const injectors::ParamSpec* declared = spec.param(name);
  if (it == params.end()) {
    if (declared != nullptr && declared->required) {
      return invalid(path, "required for " + spec.kind);
    }
    if (declared != nullptr && declared->default_value.is_number_integer()) {
      out = declared->default_value.get<int64_t>();
    }
    return Status::ok();
  }
  if (declared == nullptr || declared->type != injectors::ParamType::kInteger) {
    return Status(StatusCode::kInternal,
                  spec.kind + " declares " + name + " as a phase parameter but not as an integer");
  }
  if (Status valid = injectors::checkParamValue(*declared, *it); !valid.isOk()) {
    return Status(valid.code(), prefix + ".params." + valid.message());
  }
  out = it->get<int64_t>();
  return Status::ok();
}

Status checkHonourable(const std::string& path, int64_t ms) {
  if (ms >= kMinPhaseMs) return Status::ok();
  return unrunnable(path, std::to_string(ms) +
                              " ms is shorter than the engine can honour: a phase "
                              "must last at least " +
                              std::to_string(kMinPhaseMs) +
                              " ms (a netlink change and a timer wake-up take up to a few ms under "
                              "load)");
}

Status checkTime(const std::string& path, int64_t v) {
  if (v < 0) return unrunnable(path, "must be a non-negative integer");
  if (v > kMaxTimeMs) return unrunnable(path, "must be at most " + std::to_string(kMaxTimeMs));
  return Status::ok();
}

}  // namespace

core::Result<std::vector<FaultPhase>> stepPhases(const FaultStep& step, int index) {
  const std::string prefix = "steps[" + std::to_string(index) + "]";
  FC_RETURN_IF_ERROR(checkTime(prefix + ".at_ms", step.at_ms));
  FC_RETURN_IF_ERROR(checkTime(prefix + ".duration_ms", step.duration_ms));
  std::vector<FaultPhase> phases;

  const injectors::KindSpec* spec = injectors::findKindSpec(step.kind);
  if (spec == nullptr || spec->phases.shape == injectors::PhaseShape::kOneWindow) {
    // An unknown kind is refused by validation with the list of kinds; its timing is still
    // checked here, as one window.
    if (step.duration_ms <= 0) {
      return unrunnable(prefix + ".duration_ms", "must be > 0 for " + step.kind);
    }
    FC_RETURN_IF_ERROR(checkHonourable(prefix + ".duration_ms", step.duration_ms));
    phases.push_back({step.at_ms, step.at_ms + step.duration_ms});
    return phases;
  }

  // A repeated pattern (link_flap: down_ms, up_ms, count): `count` windows of `on` ms separated
  // by `off` ms of rest, `off` defaulting to `on` and `count` to 1.
  const injectors::PhasePattern& pattern = spec->phases;
  if (!step.params.is_object()) return invalid(prefix + ".params", "must be an object");
  std::optional<int64_t> on, off, count;
  FC_RETURN_IF_ERROR(patternParam(*spec, step.params, prefix, pattern.on_param, on));
  FC_RETURN_IF_ERROR(patternParam(*spec, step.params, prefix, pattern.off_param, off));
  FC_RETURN_IF_ERROR(patternParam(*spec, step.params, prefix, pattern.count_param, count));
  if (!on) return invalid(prefix + ".params." + pattern.on_param, "required for " + step.kind);
  const int64_t on_ms = *on;
  const int64_t off_ms = off.value_or(on_ms);
  const int64_t n = count.value_or(1);
  FC_RETURN_IF_ERROR(checkHonourable(prefix + ".params." + pattern.on_param, on_ms));
  if (n > 1) FC_RETURN_IF_ERROR(checkHonourable(prefix + ".params." + pattern.off_param, off_ms));
  // Declared ranges keep this far from overflow (link_flap: at most 1000 * 1.2e6 ms); the sum is
  // still checked against the scenario's own time limit.
  const int64_t pattern_ms = n * on_ms + (n - 1) * off_ms;
  if (pattern_ms > kMaxTimeMs) {
    return unrunnable(prefix + ".params", "the pattern lasts " + std::to_string(pattern_ms) +
                                              " ms, more than " + std::to_string(kMaxTimeMs));
  }
  if (step.duration_ms > 0 && step.duration_ms != pattern_ms) {
    return unrunnable(prefix + ".duration_ms",
                      std::to_string(step.duration_ms) + " does not match the " + step.kind +
                          " pattern: " + pattern.count_param + "*" + pattern.on_param + " + (" +
                          pattern.count_param + "-1)*" + pattern.off_param + " = " +
                          std::to_string(pattern_ms) + "; omit duration_ms to derive it");
  }
  phases.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t apply = step.at_ms + i * (on_ms + off_ms);
    phases.push_back({apply, apply + on_ms});
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
    auto targets = resolveStepTargets(step, fabric, scenario.workload.hosts);
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
