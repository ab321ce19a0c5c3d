#include "core/run_state.h"

#include <array>
#include <utility>

namespace fabric_chaos::core {
namespace {

constexpr std::array<std::pair<RunState, std::string_view>, 11> kNames = {{
    {RunState::kQueued, "queued"},
    {RunState::kPreparing, "preparing"},
    {RunState::kBaseline, "baseline"},
    {RunState::kInjecting, "injecting"},
    {RunState::kRecovering, "recovering"},
    {RunState::kAnalysing, "analysing"},
    {RunState::kPassed, "passed"},
    {RunState::kFailed, "failed"},
    {RunState::kAborted, "aborted"},
    {RunState::kInterrupted, "interrupted"},
    {RunState::kError, "error"},
}};

}  // namespace

std::string_view runStateName(RunState state) {
  for (const auto& [s, name] : kNames) {
    if (s == state) return name;
  }
  return "error";
}

std::optional<RunState> parseRunState(std::string_view name) {
  for (const auto& [s, n] : kNames) {
    if (n == name) return s;
  }
  return std::nullopt;
}

bool isFinal(RunState state) {
  switch (state) {
    case RunState::kPassed:
    case RunState::kFailed:
    case RunState::kAborted:
    case RunState::kInterrupted:
    case RunState::kError:
      return true;
    default:
      return false;
  }
}

bool isFinalRunState(std::string_view name) {
  auto state = parseRunState(name);
  return state.has_value() && isFinal(*state);
}

}  // namespace fabric_chaos::core
