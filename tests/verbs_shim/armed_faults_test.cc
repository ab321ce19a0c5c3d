// The armed faults' decisions: which kinds an event can meet, which filters match it (an unknown
// QP type or opcode never matches a filter on it), arming order, and re-arming. Pure.

#include "verbs_shim/armed_faults.h"

#include <gtest/gtest.h>

namespace fabric_chaos::verbs_shim {
namespace {

ShimFault faultOf(ShimFaultKind kind) {
  ShimFault fault;
  fault.kind = kind;
  return fault;
}

TEST(ArmedFaults, EachEventMeetsOnlyTheKindsThatCanStrikeIt) {
  EXPECT_TRUE(candidate(ShimFaultKind::kPostSendFail, ShimEventType::kPostSend));
  EXPECT_FALSE(candidate(ShimFaultKind::kPostSendFail, ShimEventType::kPostRecv));
  EXPECT_TRUE(candidate(ShimFaultKind::kQpError, ShimEventType::kPostRecv));
  EXPECT_TRUE(candidate(ShimFaultKind::kQpError, ShimEventType::kCompletion));
  EXPECT_TRUE(candidate(ShimFaultKind::kCompletionDelay, ShimEventType::kCompletion));
  EXPECT_FALSE(candidate(ShimFaultKind::kCqeError, ShimEventType::kPostSend));
  EXPECT_TRUE(candidate(ShimFaultKind::kRegMrFail, ShimEventType::kRegMr));
  EXPECT_FALSE(candidate(ShimFaultKind::kRegMrFail, ShimEventType::kCompletion));
}

TEST(ArmedFaults, FiltersMatchOnlyWhatTheEventIsKnownToBe) {
  ShimFilter filter;
  filter.qp_type = ShimQpType::kRc;
  EXPECT_FALSE(matches(filter, {"rxe0", 5, std::nullopt, ShimOpcode::kSend}))
      << "a completion of a QP the shim never saw made has no known type";
  EXPECT_TRUE(matches(filter, {"rxe0", 5, ShimQpType::kRc, ShimOpcode::kSend}));
  filter.device = "mlx5_0";
  EXPECT_FALSE(matches(filter, {"rxe0", 5, ShimQpType::kRc, ShimOpcode::kSend}));
  EXPECT_FALSE(matches(filter, {nullptr, 5, ShimQpType::kRc, ShimOpcode::kSend}));
  ShimFilter by_opcode;
  by_opcode.opcode = ShimOpcode::kRecv;
  EXPECT_FALSE(matches(by_opcode, {"rxe0", 5, ShimQpType::kRc, ShimOpcode::kRdmaWrite}));
  EXPECT_TRUE(matches(ShimFilter{}, {"", std::nullopt, std::nullopt, std::nullopt}));
}

TEST(ArmedFaults, TheFirstFaultInArmingOrderThatFiresWins) {
  ArmedFaults armed;
  EXPECT_FALSE(armed.armed());
  EXPECT_FALSE(armed.decide(ShimEventType::kCompletion, {}, 0).has_value());
  ShimFault delay = faultOf(ShimFaultKind::kCompletionDelay);
  delay.trigger.every_nth = 2;
  delay.delay_ms = 40;
  ShimFault error = faultOf(ShimFaultKind::kCqeError);
  error.status = 5;
  armed.arm({delay, error}, 7, 1000);
  EXPECT_TRUE(armed.armed());
  std::vector<ShimFaultKind> struck;
  for (int i = 0; i < 4; ++i) {
    auto decision = armed.decide(ShimEventType::kCompletion, {}, 1000 + i);
    ASSERT_TRUE(decision.has_value());
    struck.push_back(decision->kind);
    if (decision->kind == ShimFaultKind::kCompletionDelay) {
      EXPECT_EQ(decision->delay_ms, 40);
    } else {
      EXPECT_EQ(decision->status, 5);
    }
  }
  EXPECT_EQ(struck, (std::vector<ShimFaultKind>{
                        ShimFaultKind::kCqeError, ShimFaultKind::kCompletionDelay,
                        ShimFaultKind::kCqeError, ShimFaultKind::kCompletionDelay}));
  // A post meets neither.
  EXPECT_FALSE(armed.decide(ShimEventType::kPostSend, {}, 1005).has_value());
  const auto counts = armed.injections();
  ASSERT_EQ(counts.size(), 2u);
  EXPECT_EQ(counts[0].seen, 4);
  EXPECT_EQ(counts[0].fired, 2);
  EXPECT_EQ(counts[1].seen, 2);
  EXPECT_EQ(counts[1].fired, 2);
}

TEST(ArmedFaults, TriggersCountFromArmingAndRearmingStartsAfresh) {
  ArmedFaults armed;
  ShimFault fault = faultOf(ShimFaultKind::kPostSendFail);
  fault.trigger.after_ms = 100;
  fault.trigger.count = 1;
  armed.arm({fault}, 1, 5000);
  EXPECT_FALSE(armed.decide(ShimEventType::kPostSend, {}, 5099).has_value());
  EXPECT_TRUE(armed.decide(ShimEventType::kPostSend, {}, 5100).has_value());
  EXPECT_FALSE(armed.decide(ShimEventType::kPostSend, {}, 5200).has_value()) << "count spent";
  armed.arm({fault}, 1, 6000);
  EXPECT_FALSE(armed.decide(ShimEventType::kPostSend, {}, 6050).has_value());
  EXPECT_TRUE(armed.decide(ShimEventType::kPostSend, {}, 6100).has_value());
  armed.disarm();
  EXPECT_FALSE(armed.armed());
  EXPECT_TRUE(armed.injections().empty());
  armed.arm({}, 1, 7000);
  EXPECT_FALSE(armed.armed()) << "arming nothing is disarming";
}

}  // namespace
}  // namespace fabric_chaos::verbs_shim
