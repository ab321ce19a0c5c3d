// The run's fault instants (scenarios/engine/fault_schedule.h): order, and a long-running fault
// that came into force late holding for its planned length.

#include "scenarios/engine/fault_schedule.h"

#include <gtest/gtest.h>

namespace fabric_chaos::scenarios {
namespace {

PlannedAction action(const std::string& kind, int step, int64_t apply_at, int64_t revert_at) {
  PlannedAction a;
  a.kind = kind;
  a.step = step;
  a.apply_at_ms = apply_at;
  a.revert_at_ms = revert_at;
  return a;
}

TEST(FaultSchedule, InstantsAreInTimeOrderWithRevertsFirstAtEqualTimes) {
  // Two flap phases back to back (revert at 1000, next apply at 1000) and an incast.
  const std::vector<PlannedAction> plan = {action("link_flap", 0, 0, 1000),
                                           action("link_flap", 0, 1000, 2000),
                                           action("incast", 1, 500, 6500)};
  const auto instants = faultInstants(plan, 3000);
  ASSERT_EQ(instants.size(), 6u);
  EXPECT_EQ(instants[0].at_ms, 3000);
  EXPECT_TRUE(instants[0].apply);
  EXPECT_EQ(instants[1].index, 2u);  // the incast's apply at 3500
  EXPECT_EQ(instants[2].at_ms, 4000);
  EXPECT_FALSE(instants[2].apply) << "the first phase ends before the second begins";
  EXPECT_EQ(instants[3].at_ms, 4000);
  EXPECT_TRUE(instants[3].apply);
  EXPECT_EQ(instants.back().at_ms, 9500);
}

TEST(FaultSchedule, ALateLongRunningFaultHoldsForItsPlannedLength) {
  // Three parts of one incast (6 s) and a flap that ends while it runs.
  const std::vector<PlannedAction> plan = {
      action("incast", 0, 0, 6000), action("incast", 0, 0, 6000), action("incast", 0, 0, 6000),
      action("link_flap", 1, 0, 2000)};
  auto instants = faultInstants(plan, 4000);
  // The three incast parts and the flap apply at 4000: the group is instants 0..3.
  size_t from = 0;
  while (from < instants.size() && instants[from].apply) ++from;
  ASSERT_EQ(from, 4u);
  // In force 5 s late, at 9000: the incast's reverts move from 10000 to 15000, the flap's stays.
  EXPECT_EQ(holdForPlannedLength(instants, from, {0, 1, 2, 3}, plan, 9000), 3u);
  EXPECT_EQ(instants[from].at_ms, 6000);
  EXPECT_EQ(instants[from].index, 3u) << "an instant kind keeps its schedule";
  for (size_t i = from + 1; i < instants.size(); ++i) EXPECT_EQ(instants[i].at_ms, 15000);

  // On time (or early): nothing moves.
  auto on_time = faultInstants(plan, 4000);
  EXPECT_EQ(holdForPlannedLength(on_time, from, {0, 1, 2, 3}, plan, 4000), 0u);
  // Only the actions of the group that applied move.
  auto others = faultInstants(plan, 4000);
  EXPECT_EQ(holdForPlannedLength(others, from, {0}, plan, 4500), 1u);
  EXPECT_EQ(others.back().at_ms, 10500);
}

}  // namespace
}  // namespace fabric_chaos::scenarios
