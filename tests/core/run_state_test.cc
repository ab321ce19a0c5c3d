#include "core/run_state.h"

#include <gtest/gtest.h>

namespace fabric_chaos::core {
namespace {

TEST(RunState, EveryStateRoundTripsThroughItsName) {
  const RunState all[] = {RunState::kQueued,      RunState::kPreparing,  RunState::kBaseline,
                          RunState::kInjecting,   RunState::kRecovering, RunState::kAnalysing,
                          RunState::kPassed,      RunState::kFailed,     RunState::kAborted,
                          RunState::kInterrupted, RunState::kError};
  for (RunState state : all) {
    auto parsed = parseRunState(runStateName(state));
    ASSERT_TRUE(parsed.has_value()) << runStateName(state);
    EXPECT_EQ(*parsed, state);
  }
  EXPECT_FALSE(parseRunState("running").has_value());
  EXPECT_FALSE(parseRunState("").has_value());
}

TEST(RunState, OnlyTheFiveVerdictStatesAreFinal) {
  for (const char* name : {"passed", "failed", "aborted", "interrupted", "error"}) {
    EXPECT_TRUE(isFinalRunState(name)) << name;
  }
  for (const char* name :
       {"queued", "preparing", "baseline", "injecting", "recovering", "analysing", "running", ""}) {
    EXPECT_FALSE(isFinalRunState(name)) << name;
  }
}

}  // namespace
}  // namespace fabric_chaos::core
