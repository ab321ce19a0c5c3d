// A scenario's stop conditions against the fake agent: a rank's death, busbw below a fraction of
// the baseline (slow iterations, and no iteration at all), the maximum duration, and abort. Each
// must revert every fault at once, stop the workload, end the run as aborted naming the
// condition and store result.stop with consistent times.

#include <gtest/gtest.h>

#include <thread>

#include "tests/scenarios/engine/engine_fixture.h"

namespace fabric_chaos::scenarios {
namespace {

using nlohmann::json;

class EngineStop : public EngineFixture {
 protected:
  // A 20 s link_flap of h1's switch port after 500 ms of baseline: only a stop ends it early.
  Scenario longFault() {
    Scenario s = flapScenario(1);
    s.steps[0].params = {{"down_ms", 20000}};
    return s;
  }

  // Runs `scenario` to its end and checks what every stop must leave behind.
  store::RunRecord runUntilStopped(const Scenario& scenario, const std::string& reason) {
    engine_->start();
    auto id = engine_->submit(scenario, "netns-lab");
    EXPECT_TRUE(id.isOk());
    EXPECT_EQ(waitForState(*id, kFinalStates, 20000), "aborted");
    auto run = store_->getRun(*id);
    EXPECT_TRUE(run.isOk());
    const json& stop = run->result["stop"];
    EXPECT_EQ(stop.value("reason", ""), reason) << run->result.dump(2);
    EXPECT_EQ(agent_.activeFaults(), 0u);
    EXPECT_TRUE(store_->unrevertedJournal()->empty());
    EXPECT_FALSE(run->result.value("passed", true));
    EXPECT_FALSE(run->score.has_value());
    EXPECT_TRUE(run->result["gates"].empty()) << "an aborted run's gates are not evaluated";
    // Times are run-relative and ordered: condition, then the last revert.
    const double condition = stop["condition_ms"].get<double>();
    const double reverted = stop["reverted_ms"].get<double>();
    EXPECT_GT(condition, 0);
    EXPECT_GE(reverted, condition);
    EXPECT_DOUBLE_EQ(stop["time_to_revert_ms"].get<double>(), reverted - condition);
    EXPECT_LT(stop["time_to_revert_ms"].get<double>(), 1000);
    EXPECT_FALSE(stop["detail"].get<std::string>().empty());
    // The timeline shows the workload stopping after the revert.
    auto exits = eventsOfKind(*id, "rank_exit");
    EXPECT_FALSE(exits.empty());
    std::cout << reason << ": condition at " << condition << " ms, reverted at " << reverted
              << " ms, time to revert " << stop["time_to_revert_ms"].get<double>() << " ms\n";
    return run.value();
  }

  double faultAppliedMs(int64_t id) {
    auto applied = eventsOfKind(id, "fault_applied");
    EXPECT_EQ(applied.size(), 1u);
    return applied.empty() ? 0 : applied[0].t_ms;
  }
  // When the engine issued the apply: the event is stamped when the agent's call returns, which
  // can be after effects of the fault the agent reported during the call (a rank dying).
  double faultIssuedMs(int64_t id) {
    auto applied = eventsOfKind(id, "fault_applied");
    EXPECT_EQ(applied.size(), 1u);
    return applied.empty() ? 0 : applied[0].detail["scheduled_ms"].get<double>();
  }
};

TEST_F(EngineStop, ARankThatDiesAbortsTheRunByDefault) {
  agent_.rank_dies_after_first_apply = true;
  const auto run = runUntilStopped(longFault(), "rank_died");
  EXPECT_EQ(run.error, "stop condition: rank 1 exited unexpectedly (exit code 1)");
  const json& stop = run.result["stop"];
  EXPECT_EQ(stop["faults_reverted"], 1);
  // The condition is the rank's exit, which came after the fault went on.
  auto exits = eventsOfKind(run.id, "rank_exit");
  double unexpected_exit = -1;
  for (const auto& e : exits) {
    if (!e.detail["expected"].get<bool>()) unexpected_exit = e.t_ms;
  }
  ASSERT_GE(unexpected_exit, 0);
  EXPECT_NEAR(stop["condition_ms"].get<double>(), unexpected_exit, 5);
  EXPECT_GE(stop["condition_ms"].get<double>(), faultIssuedMs(run.id));
  // Measured data is kept: there was a baseline.
  EXPECT_TRUE(run.result.contains("analysis"));
  EXPECT_EQ(run.result["fault_windows"].size(), 1u);
}

// A job's ranks die together: the first to exit is often a victim of the one whose error
// explains the death. Their errors all reach the run's error, in the order they came.
TEST_F(EngineStop, RanksThatDieTogetherAreAllNamedInTheRunsError) {
  agent_.rank_dies_after_first_apply = true;
  agent_.rank0_follows_after_ms = 100;
  const auto run = runUntilStopped(longFault(), "rank_died");
  EXPECT_EQ(run.error,
            "stop condition: rank 1 exited unexpectedly (exit code 1): rank 1: the command exited "
            "with code 1 (RuntimeError: Connection closed by peer); then rank 0: the command "
            "exited with code 1 (RuntimeError: Timed out waiting 8000ms)");
  EXPECT_NE(run.result["stop"]["detail"].get<std::string>().find("Timed out"), std::string::npos);
  // Rank 0 exited by itself, not because the run stopped it.
  int unexpected = 0;
  for (const auto& e : eventsOfKind(run.id, "rank_exit")) {
    if (!e.detail["expected"].get<bool>()) ++unexpected;
  }
  EXPECT_EQ(unexpected, 2);
}

TEST_F(EngineStop, BusbwBelowTheFractionForLongEnoughAbortsTheRun) {
  // Iterations take 40 ms instead of 2 ms while faulted: busbw drops to 5% of baseline.
  Scenario scenario = longFault();
  scenario.stop_conditions.min_busbw_fraction = 0.5;
  scenario.stop_conditions.for_ms = 300;
  const auto run = runUntilStopped(scenario, "busbw_below");
  EXPECT_EQ(run.error, "stop condition: busbw below 50% of baseline for 300 ms");
  const json& stop = run.result["stop"];
  // The low stretch starts at the last good iteration, at most one clean iteration period
  // (2 ms + 5 ms gap) before the fault went on, or just after it (an iteration in flight).
  const double applied = faultAppliedMs(run.id);
  EXPECT_NEAR(stop["condition_ms"].get<double>(), applied + 300, 60) << stop.dump();
  auto armed = eventsOfKind(run.id, "stop_condition_armed");
  ASSERT_EQ(armed.size(), 1u);
  EXPECT_GT(armed[0].detail["baseline_busbw_gbps"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(armed[0].detail["threshold_gbps"].get<double>(),
                   armed[0].detail["baseline_busbw_gbps"].get<double>() * 0.5);
}

TEST_F(EngineStop, NoIterationCompletingCountsAsBelow) {
  // A faulted iteration takes 3 s: nothing completes during the stretch.
  agent_.faulted_duration_ms = 3000;
  Scenario scenario = longFault();
  scenario.stop_conditions.min_busbw_fraction = 0.05;
  scenario.stop_conditions.for_ms = 400;
  const auto run = runUntilStopped(scenario, "busbw_below");
  const double applied = faultAppliedMs(run.id);
  EXPECT_NEAR(run.result["stop"]["condition_ms"].get<double>(), applied + 400, 60);
}

TEST_F(EngineStop, ABriefDipShorterThanForMsDoesNotStopTheRun) {
  Scenario scenario = flapScenario(1);  // 200 ms of fault
  scenario.stop_conditions.min_busbw_fraction = 0.5;
  scenario.stop_conditions.for_ms = 1000;
  engine_->start();
  auto id = engine_->submit(scenario, "netns-lab");
  ASSERT_TRUE(id.isOk());
  EXPECT_EQ(waitForState(*id, kFinalStates, 15000), "passed");
  EXPECT_FALSE(store_->getRun(*id)->result.contains("stop"));
}

TEST_F(EngineStop, ExceedingMaxDurationAbortsTheRun) {
  Scenario scenario = longFault();
  scenario.max_duration_ms = 1500;  // the plan needs 21 s (the engine trusts validation)
  const auto run = runUntilStopped(scenario, "max_duration");
  EXPECT_EQ(run.error,
            "stop condition: the run exceeded max_duration_ms (1500 ms since it started)");
  EXPECT_DOUBLE_EQ(run.result["stop"]["condition_ms"].get<double>(), 1500);
}

TEST_F(EngineStop, AbortDuringTheBaselineStopsBeforeAnyFault) {
  engine_->start();
  auto id = engine_->submit(longFault(), "netns-lab");
  ASSERT_TRUE(id.isOk());
  ASSERT_EQ(waitForState(*id, {"baseline"}, 10000), "baseline");
  ASSERT_TRUE(engine_->abort(*id).isOk());
  EXPECT_EQ(waitForState(*id, kFinalStates, 5000), "aborted");
  auto run = store_->getRun(*id);
  EXPECT_EQ(run->result["stop"]["reason"], "abort_request");
  EXPECT_EQ(run->result["stop"]["faults_reverted"], 0);
  EXPECT_FALSE(run->result.contains("analysis")) << "no baseline was completed";
  EXPECT_TRUE(agent_.log().empty());
}

}  // namespace
}  // namespace fabric_chaos::scenarios
