// Faults for agents that act on schedule (remote agents): the fault timeline hands each one, and
// its planned revert, out ahead of its instant, the agent acts by its own clock, and the run's
// window opens and closes when the agent says it acted, not when the controller heard back. The
// fake agent here applies at the instant it was given, in awaitScheduled(), so what is checked is
// the order of things and where the window starts, not how precise a timer is.

#include <gtest/gtest.h>

#include "scenarios/engine/engine.h"
#include "scenarios/engine/fault_timeline.h"
#include "tests/scenarios/engine/engine_fixture.h"

namespace fabric_chaos::scenarios {
namespace {

using nlohmann::json;

class ScheduledApplyTest : public EngineFixture {
 protected:
  void SetUp() override {
    EngineFixture::SetUp();
    agent_.applies_on_schedule = true;
  }
  EngineOptions options() override {
    EngineOptions o = EngineFixture::options();
    o.schedule_above_agents = 0;  // one agent is enough here
    return o;
  }
};

TEST_F(ScheduledApplyTest, TheFaultIsHandedOutBeforeItsInstantAndItsWindowOpensWhenApplied) {
  Scenario s = flapScenario(1);
  s.steps[0].params = {{"down_ms", 300}};
  engine_->start();
  auto id = engine_->submit(s, "netns-lab");
  ASSERT_TRUE(id.isOk());
  ASSERT_EQ(waitForState(*id, kFinalStates, 15000), "passed") << store_->getRun(*id)->error;
  EXPECT_EQ(agent_.log(), (std::vector<std::string>{"schedule p1", "apply p1", "schedule-revert p1",
                                                    "revert p1"}));
  EXPECT_EQ(agent_.activeFaults(), 0u);

  const auto deliveries = agent_.deliveries();
  ASSERT_EQ(deliveries.size(), 1u);
  EXPECT_LT(deliveries[0].delivered_ns, deliveries[0].at_ns);  // ahead of the instant

  const auto applied = eventsOfKind(*id, "fault_applied");
  ASSERT_EQ(applied.size(), 1u);
  const json& detail = applied[0].detail;
  EXPECT_EQ(detail["delivery"], "scheduled");
  const double scheduled_ms = detail["scheduled_ms"].get<double>();
  const double in_force_ms = detail["in_force_ms"].get<double>();
  // The instant the agent was given is the scheduled one, on the run's clock.
  auto run = store_->getRun(*id);
  ASSERT_TRUE(run.isOk());
  EXPECT_GE(in_force_ms + 0.001, scheduled_ms);
  const json& windows = run->result["fault_windows"];
  ASSERT_EQ(windows.size(), 1u);
  EXPECT_DOUBLE_EQ(windows[0]["start_ms"].get<double>(), in_force_ms);
  EXPECT_TRUE(store_->unrevertedJournal()->empty());

  // The revert was handed over too, and the window ends when the agent says it reverted.
  const auto reverted = eventsOfKind(*id, "fault_reverted");
  ASSERT_EQ(reverted.size(), 1u);
  const json& end = reverted[0].detail;
  EXPECT_EQ(end["delivery"], "scheduled");
  EXPECT_EQ(end["observed"], json({{"fake", true}}));  // what the agent saw just before
  const double out_of_force_ms = end["out_of_force_ms"].get<double>();
  EXPECT_GE(out_of_force_ms + 0.001, end["scheduled_ms"].get<double>());
  EXPECT_DOUBLE_EQ(windows[0]["end_ms"].get<double>(), out_of_force_ms);
}

TEST_F(ScheduledApplyTest, AStopRevertsAtOnceEvenOnAgentsThatActOnSchedule) {
  Scenario s = flapScenario(1);
  s.steps[0].params = {{"down_ms", 5000}};
  s.max_duration_ms = 600000;
  engine_->start();
  auto id = engine_->submit(s, "netns-lab");
  ASSERT_TRUE(id.isOk());
  ASSERT_TRUE(waitForActiveFaults(1, 10000));
  ASSERT_TRUE(engine_->abort(*id).isOk());
  EXPECT_EQ(waitForState(*id, kFinalStates, 5000), "aborted");
  EXPECT_EQ(agent_.log(), (std::vector<std::string>{"schedule p1", "apply p1", "revert p1"}));
  const auto reverted = eventsOfKind(*id, "fault_reverted");
  ASSERT_EQ(reverted.size(), 1u);
  EXPECT_EQ(reverted[0].detail["delivery"], "at_once");
  EXPECT_TRUE(store_->unrevertedJournal()->empty());
}

TEST_F(ScheduledApplyTest, AScheduledApplyThatFailsEndsTheRunInErrorAndLeavesNothing) {
  agent_.fail_apply_on_call = 1;
  engine_->start();
  auto id = engine_->submit(flapScenario(1), "netns-lab");
  ASSERT_TRUE(id.isOk());
  EXPECT_EQ(waitForState(*id, kFinalStates, 15000), "error");
  EXPECT_EQ(agent_.activeFaults(), 0u);
  EXPECT_EQ(agent_.log(), (std::vector<std::string>{"schedule p1", "apply p1", "revert p1"}));
  const auto errors = eventsOfKind(*id, "fault_error");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].detail["delivery"], "scheduled");
  EXPECT_NE(errors[0].detail["error"].get<std::string>().find("injected failure"),
            std::string::npos);
  EXPECT_TRUE(store_->unrevertedJournal()->empty());
}

TEST_F(ScheduledApplyTest, AFaultThatCannotBeHandedOverIsAppliedAtTheInstant) {
  agent_.refuse_schedules = true;  // an agent of an older version
  engine_->start();
  auto id = engine_->submit(flapScenario(1), "netns-lab");
  ASSERT_TRUE(id.isOk());
  ASSERT_EQ(waitForState(*id, kFinalStates, 15000), "passed") << store_->getRun(*id)->error;
  const auto applied = eventsOfKind(*id, "fault_applied");
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].detail["delivery"], "at_once");
  EXPECT_GE(applied[0].detail["in_force_ms"].get<double>(),
            applied[0].detail["scheduled_ms"].get<double>());
  EXPECT_EQ(agent_.activeFaults(), 0u);
}

// Below the threshold (by default more than one wave of concurrent calls), agents that could
// act on schedule are called at the instant: a small lab gains nothing from it.
class SmallFleetTest : public EngineFixture {
 protected:
  void SetUp() override {
    EngineFixture::SetUp();
    agent_.applies_on_schedule = true;
  }
};

TEST_F(SmallFleetTest, AFewRemoteAgentsAreCalledAtTheInstant) {
  engine_->start();
  auto id = engine_->submit(flapScenario(1), "netns-lab");
  ASSERT_TRUE(id.isOk());
  ASSERT_EQ(waitForState(*id, kFinalStates, 15000), "passed") << store_->getRun(*id)->error;
  EXPECT_TRUE(agent_.deliveries().empty());
  EXPECT_EQ(agent_.log(), (std::vector<std::string>{"apply p1", "revert p1"}));
  const auto applied = eventsOfKind(*id, "fault_applied");
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].detail["delivery"], "at_once");
}

TEST_F(ScheduledApplyTest, AnAgentThatAppliesAtOnceIsCalledAtTheInstant) {
  // The local agent: nothing is handed out ahead, the call is made at the instant.
  agent_.applies_on_schedule = false;
  Scenario s = flapScenario(1);
  engine_->start();
  auto id = engine_->submit(s, "netns-lab");
  ASSERT_TRUE(id.isOk());
  ASSERT_EQ(waitForState(*id, kFinalStates, 15000), "passed") << store_->getRun(*id)->error;
  EXPECT_TRUE(agent_.deliveries().empty());
  const auto applied = eventsOfKind(*id, "fault_applied");
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].detail["delivery"], "at_once");
  EXPECT_GE(applied[0].detail["in_force_ms"].get<double>(),
            applied[0].detail["scheduled_ms"].get<double>());
}

}  // namespace
}  // namespace fabric_chaos::scenarios
