#pragma once
// A run's states, as one closed set: what the engine moves a run through and the store, the API,
// the client and the suite runner read back. The store keeps the name; everything that decides on
// a state parses it here, so "is it over?" has one answer (isFinal). Pure.

#include <optional>
#include <string_view>

namespace fabric_chaos::core {

enum class RunState {
  kQueued,
  kPreparing,
  kBaseline,
  kInjecting,
  kRecovering,
  kAnalysing,
  // Final: a run in one of these never changes again.
  kPassed,
  kFailed,
  kAborted,
  kInterrupted,
  kError,
};

std::string_view runStateName(RunState state);
std::optional<RunState> parseRunState(std::string_view name);
bool isFinal(RunState state);
// For stored text (run and suite-run states share the final names): unknown text is not final.
bool isFinalRunState(std::string_view name);

}  // namespace fabric_chaos::core
