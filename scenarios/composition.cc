#include "scenarios/composition.h"

#include <map>

namespace fabric_chaos::scenarios {

KindTraits kindTraits(std::string_view kind) {
  if (const injectors::KindSpec* spec = injectors::findKindSpec(kind)) {
    return {spec->resource, spec->composition,
            spec->lifecycle == injectors::Lifecycle::kLongRunning};
  }
  return {std::string(kind), Composition::kExclusive, false};
}

namespace {

std::string scopeOf(const ResolvedTarget& target) {
  return target.side == LinkSide::kHost ? "host:" + target.host + "/" : "local/";
}

}  // namespace

std::vector<std::string> targetKeys(const ResolvedTarget& target) {
  std::vector<std::string> keys = injectors::lockKeys(target.target);
  for (std::string& key : keys) key = scopeOf(target) + key;
  return keys;
}

// The tagged JSON rather than the lock keys: a traffic set and its mirror image (sources and sinks
// swapped) hold the same interfaces but are different targets.
std::string targetKey(const ResolvedTarget& target) {
  return scopeOf(target) + injectors::toJson(target.target).dump();
}

std::string describeTarget(const ResolvedTarget& target) {
  std::string where = injectors::describe(target.target);
  if (target.side == LinkSide::kHost) where = "host " + target.host + " " + where;
  return where;
}

core::Status checkComposition(const std::vector<PlannedAction>& actions) {
  // Per (target, resource), the actions holding it, checked pairwise in apply order. Fabrics and
  // scenarios are small (a few hundred actions), so the quadratic scan within one key is cheap.
  std::map<std::string, std::vector<const PlannedAction*>> holders;
  for (const PlannedAction& action : actions) {
    const KindTraits traits = kindTraits(action.kind);
    for (const std::string& target_key : targetKeys(action.target)) {
      auto& list = holders[target_key + "#" + traits.resource];
      for (const PlannedAction* other : list) {
        if (other->step == action.step) continue;  // phases of one step never overlap
        const bool overlap =
            other->apply_at_ms < action.revert_at_ms && action.apply_at_ms < other->revert_at_ms;
        if (!overlap) continue;
        const KindTraits other_traits = kindTraits(other->kind);
        if (traits.composition == Composition::kStacks &&
            other_traits.composition == Composition::kStacks && other->kind == action.kind) {
          continue;
        }
        const int64_t from = std::max(other->apply_at_ms, action.apply_at_ms);
        const int64_t to = std::min(other->revert_at_ms, action.revert_at_ms);
        // Two targets that share a part (a traffic set and one of its interfaces) are both named.
        std::string where = describeTarget(action.target);
        if (const std::string theirs = describeTarget(other->target); theirs != where) {
          where = theirs + " and " + where;
        }
        return core::Status(
            core::StatusCode::kUnprocessable,
            "steps[" + std::to_string(other->step) + "] (" + other->kind + ") and steps[" +
                std::to_string(action.step) + "] (" + action.kind + ") overlap on " + where +
                " from " + std::to_string(from) + " to " + std::to_string(to) +
                " ms after the baseline: both need its " + traits.resource +
                ", which one fault holds at a time; move one step or put both effects in one " +
                "fault");
      }
      list.push_back(&action);
    }
  }
  return core::Status::ok();
}

}  // namespace fabric_chaos::scenarios
