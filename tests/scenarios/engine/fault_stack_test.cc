// Faults that overlap on one target and reverts that fail, through the engine against the fake
// agent, whose capture/revert behave like the real injectors' (a prior captured mid-fault puts
// the fault back). Every case here failed before faults formed per-target stacks: the second of
// two crossing flaps captured "down" and restored it, and a failed revert was dropped.

#include <gtest/gtest.h>

#include "scenarios/engine/engine.h"
#include "scenarios/engine/fault_timeline.h"
#include "tests/scenarios/engine/engine_fixture.h"

namespace fabric_chaos::scenarios {
namespace {

using core::Status;
using nlohmann::json;

// Two link_flap steps on h1's switch port (fcl-sw0/p1): [a_at, a_at+a_down) and
// [b_at, b_at+b_down), ms after the 500 ms baseline.
Scenario twoFlaps(int64_t a_at, int64_t a_down, int64_t b_at, int64_t b_down) {
  Scenario s = flapScenario(1);
  s.steps[0].at_ms = a_at;
  s.steps[0].params = {{"down_ms", a_down}};
  FaultStep second = s.steps[0];
  second.at_ms = b_at;
  second.params = {{"down_ms", b_down}};
  s.steps.push_back(second);
  return s;
}

class FaultStackTest : public EngineFixture {
 protected:
  EngineOptions options() override {
    EngineOptions o{5000, 17000, 1000};
    o.revert_retry_budget_ms = 400;
    return o;
  }

  double eventMs(int64_t id, const std::string& kind, size_t n) {
    auto events = eventsOfKind(id, kind);
    return n < events.size() ? events[n].t_ms : -1;
  }
};

TEST_F(FaultStackTest, CrossingFlapsHoldThePortDownForTheirUnionAndRestoreItOnce) {
  engine_->start();
  auto id = engine_->submit(twoFlaps(0, 400, 200, 400), "netns-lab");  // 0-400 and 200-600
  ASSERT_TRUE(id.isOk());
  ASSERT_EQ(waitForState(*id, kFinalStates, 15000), "passed") << store_->getRun(*id)->error;
  // One apply when the first starts, one restore when the last ends: the port was never brought
  // up in the middle and never left down.
  EXPECT_EQ(agent_.log(), (std::vector<std::string>{"apply p1", "revert p1"}));
  EXPECT_EQ(agent_.activeFaults(), 0u);
  EXPECT_TRUE(store_->unrevertedJournal()->empty());

  auto applied = eventsOfKind(*id, "fault_applied");
  auto reverted = eventsOfKind(*id, "fault_reverted");
  ASSERT_EQ(applied.size(), 2u);
  ASSERT_EQ(reverted.size(), 2u);
  EXPECT_EQ(applied[1].detail["stacked_on"], json::array({0}));
  EXPECT_EQ(reverted[0].detail["step"], 0);
  EXPECT_EQ(reverted[0].detail["restored"], false);
  EXPECT_EQ(reverted[0].detail["still_held_by"], json::array({1}));
  EXPECT_EQ(reverted[1].detail["restored"], true);
  // The restore came when the second window ended, 600 ms after the first apply.
  EXPECT_NEAR(reverted[1].t_ms - applied[0].t_ms, 600, 60);
  // Each step keeps its own window for the analysis.
  auto run = store_->getRun(*id);
  const json& windows = run->result["fault_windows"];
  ASSERT_EQ(windows.size(), 2u);
  EXPECT_NEAR(windows[0]["end_ms"].get<double>() - windows[0]["start_ms"].get<double>(), 400, 60);
  EXPECT_NEAR(windows[1]["end_ms"].get<double>() - windows[1]["start_ms"].get<double>(), 400, 60);
}

// A long-running fault's emitter is asked about once a second while in force: one that stopped
// inside its window is recorded once, with its status and log, and the revert still comes.
TEST_F(FaultStackTest, AnEmitterThatStopsInsideItsWindowIsRecordedOnceAsUnhealthy) {
  agent_.observe_hook = [](const injectors::Fault&, int call) {
    if (call == 1) return json{{"running", true}, {"report", {{"frames", 10}}}};
    return json{{"running", false}, {"exit_code", 1}, {"log", "cannot send on p1: ENETDOWN"}};
  };
  Scenario s = flapScenario(1);
  s.steps[0].kind = "pfc_storm";
  s.steps[0].duration_ms = 3500;
  s.steps[0].params = {{"priorities", {3}}};
  engine_->start();
  auto id = engine_->submit(s, "netns-lab");
  ASSERT_TRUE(id.isOk());
  ASSERT_EQ(waitForState(*id, kFinalStates, 15000), "passed") << store_->getRun(*id)->error;

  auto applied = eventsOfKind(*id, "fault_applied");
  auto unhealthy = eventsOfKind(*id, "fault_unhealthy");
  auto reverted = eventsOfKind(*id, "fault_reverted");
  ASSERT_EQ(applied.size(), 1u);
  ASSERT_EQ(unhealthy.size(), 1u) << "recorded once, not once a second";
  ASSERT_EQ(reverted.size(), 1u);
  EXPECT_EQ(unhealthy[0].detail["kind"], "pfc_storm");
  EXPECT_EQ(unhealthy[0].detail["observed"]["exit_code"], 1);
  EXPECT_NE(unhealthy[0].detail["error"].get<std::string>().find(
                "stopped before its window ended (status 1): cannot send on p1: ENETDOWN"),
            std::string::npos)
      << unhealthy[0].detail.dump();
  // The first look (1 s in) saw it running, the second (2 s in) saw it stopped.
  EXPECT_NEAR(unhealthy[0].t_ms - applied[0].t_ms, 2000, 300);
  EXPECT_EQ(agent_.log(), (std::vector<std::string>{"apply p1", "revert p1"}));
}

TEST_F(FaultStackTest, ANestedFlapEndingFirstLeavesThePortDownUntilTheOuterEnds) {
  engine_->start();
  auto id = engine_->submit(twoFlaps(0, 600, 200, 200), "netns-lab");  // 0-600 around 200-400
  ASSERT_TRUE(id.isOk());
  EXPECT_EQ(waitForState(*id, kFinalStates, 15000), "passed") << store_->getRun(*id)->error;
  EXPECT_EQ(agent_.log(), (std::vector<std::string>{"apply p1", "revert p1"}));
  EXPECT_EQ(agent_.activeFaults(), 0u);
  auto reverted = eventsOfKind(*id, "fault_reverted");
  ASSERT_EQ(reverted.size(), 2u);
  EXPECT_EQ(reverted[0].detail["step"], 1);  // the inner one ended first, restoring nothing
  EXPECT_EQ(reverted[0].detail["restored"], false);
  EXPECT_NEAR(reverted[1].t_ms - eventMs(*id, "fault_applied", 0), 600, 60);
}

TEST_F(FaultStackTest, BackToBackFlapsOnOnePortAreTwoFaults) {
  engine_->start();
  auto id = engine_->submit(twoFlaps(0, 200, 200, 200), "netns-lab");
  ASSERT_TRUE(id.isOk());
  EXPECT_EQ(waitForState(*id, kFinalStates, 15000), "passed") << store_->getRun(*id)->error;
  EXPECT_EQ(agent_.log(),
            (std::vector<std::string>{"apply p1", "revert p1", "apply p1", "revert p1"}));
  EXPECT_EQ(agent_.activeFaults(), 0u);
}

TEST_F(FaultStackTest, AFailedRevertIsRetriedAndTheRunStillPassesWhenTheRetryWorks) {
  agent_.failRevertOn(1);
  engine_->start();
  auto id = engine_->submit(flapScenario(1), "netns-lab");
  ASSERT_TRUE(id.isOk());
  EXPECT_EQ(waitForState(*id, kFinalStates, 15000), "passed") << store_->getRun(*id)->error;
  EXPECT_EQ(agent_.log(), (std::vector<std::string>{"apply p1", "revert-failed p1", "revert p1"}));
  EXPECT_EQ(agent_.activeFaults(), 0u);
  EXPECT_TRUE(store_->unrevertedJournal()->empty());
  auto errors = eventsOfKind(*id, "revert_error");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].detail["attempt"], 1);
  EXPECT_EQ(errors[0].detail["retry_in_ms"], 20);
  auto reverted = eventsOfKind(*id, "fault_reverted");
  ASSERT_EQ(reverted.size(), 1u);
  EXPECT_EQ(reverted[0].detail["attempts"], 2);
  // The retry came after the back-off, not at the end of the run.
  EXPECT_LT(reverted[0].t_ms - errors[0].t_ms, 200);
}

TEST_F(FaultStackTest, ARevertThatKeepsFailingEndsTheRunInErrorNamingTheFaultLeft) {
  for (int n = 1; n <= 200; ++n) agent_.failRevertOn(n, "device busy");
  engine_->start();
  auto id = engine_->submit(flapScenario(1), "netns-lab");
  ASSERT_TRUE(id.isOk());
  EXPECT_EQ(waitForState(*id, kFinalStates, 15000), "error");
  auto run = store_->getRun(*id);
  ASSERT_TRUE(run.isOk());
  EXPECT_FALSE(run->result["passed"].get<bool>());
  EXPECT_EQ(run->result["verdict_before_fault_left"], "passed");  // it measured fine
  const json& left = run->result["fault_left"];
  ASSERT_EQ(left.size(), 1u) << run->result.dump(2);
  EXPECT_EQ(left[0]["kind"], "link_flap");
  EXPECT_EQ(left[0]["target"], "fcl-sw0/p1");
  EXPECT_GE(left[0]["attempts"].get<int>(), 3);
  EXPECT_EQ(left[0]["error"], "device busy");
  EXPECT_NE(run->error.find("link_flap on fcl-sw0/p1"), std::string::npos) << run->error;
  EXPECT_EQ(agent_.activeFaults(), 1u);  // really still applied
  auto journal = store_->unrevertedJournal();
  ASSERT_EQ(journal->size(), 1u);
  EXPECT_EQ((*journal)[0].state, "failed");
  EXPECT_EQ(eventsOfKind(*id, "fault_left").size(), 1u);

  // The operator's "revert now" takes it back once the device lets go.
  const int64_t journal_id = (*journal)[0].id;
  EXPECT_FALSE(engine_->ownedByRunningRun(*id));
  Status busy = engine_->revertNow(journal_id);
  EXPECT_EQ(busy.code(), core::StatusCode::kUnavailable);
  EXPECT_NE(busy.message().find("device busy"), std::string::npos) << busy.message();
  EXPECT_EQ(agent_.activeFaults(), 1u);
  EXPECT_EQ(store_->unrevertedJournal()->size(), 1u);
  agent_.stopFailingReverts();
  Status reverted = engine_->revertNow(journal_id);
  ASSERT_TRUE(reverted.isOk()) << reverted.toString();
  EXPECT_EQ(agent_.activeFaults(), 0u);
  EXPECT_TRUE(store_->unrevertedJournal()->empty());
  EXPECT_EQ(engine_->revertNow(journal_id).code(), core::StatusCode::kNotFound);
}

TEST_F(FaultStackTest, RevertNowRefusesAFaultOfARunningRun) {
  Scenario s = flapScenario(1);
  s.steps[0].params = {{"down_ms", 20000}};
  s.max_duration_ms = 600000;
  engine_->start();
  auto id = engine_->submit(s, "netns-lab");
  ASSERT_TRUE(id.isOk());
  ASSERT_TRUE(waitForActiveFaults(1, 10000));
  auto journal = store_->unrevertedJournal();
  ASSERT_EQ(journal->size(), 1u);
  Status refused = engine_->revertNow((*journal)[0].id);
  EXPECT_EQ(refused.code(), core::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("/abort"), std::string::npos) << refused.message();
  EXPECT_EQ(agent_.activeFaults(), 1u);
  ASSERT_TRUE(engine_->abort(*id).isOk());
  EXPECT_EQ(waitForState(*id, kFinalStates, 5000), "aborted");
  EXPECT_EQ(agent_.activeFaults(), 0u);
}

TEST_F(FaultStackTest, RevertingEverythingGoesNewestFirst) {
  // h1's port from 0, h2's from 100, h3's from 200, all held for 20 s; the abort takes them back
  // in reverse order of application.
  Scenario s = flapScenario(1);
  s.max_duration_ms = 600000;
  s.steps[0].params = {{"down_ms", 20000}};
  for (int host = 2; host <= 3; ++host) {
    FaultStep step = s.steps[0];
    step.target.host = "h" + std::to_string(host);
    step.at_ms = 100 * (host - 1);
    s.steps.push_back(step);
  }
  engine_->start();
  auto id = engine_->submit(s, "netns-lab");
  ASSERT_TRUE(id.isOk());
  ASSERT_TRUE(waitForActiveFaults(3, 10000));
  ASSERT_TRUE(engine_->abort(*id).isOk());
  EXPECT_EQ(waitForState(*id, kFinalStates, 5000), "aborted");
  EXPECT_EQ(agent_.log(), (std::vector<std::string>{"apply p1", "apply p2", "apply p3", "revert p3",
                                                    "revert p2", "revert p1"}));
}

TEST_F(FaultStackTest, StartUpRecoveryRevertsNewestFirst) {
  for (const char* port : {"p1", "p2", "p3"}) {
    injectors::Fault fault{
        "link_flap", injectors::InterfaceTarget{"fcl-sw0", port}, {{"down_ms", 100}}};
    ASSERT_TRUE(store_->journalIntent(0, injectors::toJson(fault), {{"admin_up", true}}).isOk());
  }
  auto recovery = engine_->recoverAtStartup();
  ASSERT_TRUE(recovery.isOk());
  EXPECT_EQ(recovery->reverted, 3);
  EXPECT_EQ(agent_.log(), (std::vector<std::string>{"revert p3", "revert p2", "revert p1"}));
}

TEST_F(FaultStackTest, AFlapPatternIsJournaledOnceBeforeItsFirstPhase) {
  engine_->start();
  auto id = engine_->submit(flapScenario(3), "netns-lab");
  ASSERT_TRUE(id.isOk());
  ASSERT_EQ(waitForState(*id, kFinalStates, 15000), "passed") << store_->getRun(*id)->error;
  auto applied = eventsOfKind(*id, "fault_applied");
  ASSERT_EQ(applied.size(), 3u);
  // The three phases share one journal entry, written before the first apply (it is not a new
  // fsync at each phase), and closed after the last.
  const json journal_id = applied[0].detail["journal_id"];
  for (const auto& e : applied) EXPECT_EQ(e.detail["journal_id"], journal_id);
  auto reverted = eventsOfKind(*id, "fault_reverted");
  ASSERT_EQ(reverted.size(), 3u);
  for (const auto& e : reverted) EXPECT_EQ(e.detail["journal_id"], journal_id);
  EXPECT_TRUE(store_->unrevertedJournal()->empty());
  EXPECT_EQ(agent_.activeFaults(), 0u);
}

TEST_F(FaultStackTest, OneInstantsFaultsGoToTheirTargetsTogether) {
  // Four ports flapped at the same instant: the fake holds each apply until all four are in
  // progress at once (or 2 s pass), so sending them one after the other would show 1.
  agent_.apply_barrier = 4;
  Scenario s = flapScenario(1);
  s.steps.clear();
  for (int host = 0; host < 4; ++host) {
    FaultStep step = flapScenario(1).steps[0];
    step.target.host = "h" + std::to_string(host);
    step.params = {{"down_ms", 200}};
    s.steps.push_back(step);
  }
  engine_->start();
  auto id = engine_->submit(s, "netns-lab");
  ASSERT_TRUE(id.isOk());
  ASSERT_EQ(waitForState(*id, kFinalStates, 15000), "passed") << store_->getRun(*id)->error;
  EXPECT_EQ(agent_.maxApplyConcurrency(), 4);
  EXPECT_EQ(agent_.activeFaults(), 0u);
}

TEST_F(FaultStackTest, AStopBeforeLaterPhasesClosesTheirJournalEntry) {
  Scenario s = flapScenario(3);
  s.steps[0].params = {{"down_ms", 300}, {"up_ms", 5000}, {"count", 3}};
  s.max_duration_ms = 600000;
  engine_->start();
  auto id = engine_->submit(s, "netns-lab");
  ASSERT_TRUE(id.isOk());
  ASSERT_TRUE(waitForActiveFaults(1, 10000));
  ASSERT_TRUE(waitForActiveFaults(0, 10000));  // first phase over; the entry stays open
  ASSERT_EQ(store_->unrevertedJournal()->size(), 1u);
  ASSERT_TRUE(engine_->abort(*id).isOk());
  EXPECT_EQ(waitForState(*id, kFinalStates, 5000), "aborted");
  EXPECT_TRUE(store_->unrevertedJournal()->empty());
  EXPECT_EQ(agent_.log(), (std::vector<std::string>{"apply p1", "revert p1"}));
}

TEST_F(FaultStackTest, ARunStuckInAnAgentCallWhileHoldingAFaultCountsAsWedged) {
  // The fake holds the apply for 2 s (nobody else arrives at its barrier): the run thread shows
  // no progress while its fault is in the stack, which is what stops serve's lease heartbeat.
  agent_.apply_barrier = 2;
  engine_->start();
  EXPECT_FALSE(engine_->holdsFaultsWithoutProgress(300));
  auto id = engine_->submit(flapScenario(1), "netns-lab");
  ASSERT_TRUE(id.isOk());
  const int64_t deadline = core::steadyNowNs() + 10'000'000'000;
  bool wedged = false;
  while (!wedged && core::steadyNowNs() < deadline) {
    wedged = engine_->holdsFaultsWithoutProgress(300);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(wedged);
  ASSERT_EQ(waitForState(*id, kFinalStates, 15000), "passed") << store_->getRun(*id)->error;
  EXPECT_FALSE(engine_->holdsFaultsWithoutProgress(300));
}

TEST(RevertRetryDelay, DoublesFrom20MsUpToOneSecond) {
  EXPECT_EQ(revertRetryDelayMs(1), 20);
  EXPECT_EQ(revertRetryDelayMs(2), 40);
  EXPECT_EQ(revertRetryDelayMs(3), 80);
  EXPECT_EQ(revertRetryDelayMs(6), 640);
  EXPECT_EQ(revertRetryDelayMs(7), 1000);
  EXPECT_EQ(revertRetryDelayMs(100), 1000);
}

}  // namespace
}  // namespace fabric_chaos::scenarios
