// The engine's scheduler against the fake agent and a real in-memory store: runs on disjoint
// targets overlap in time, overlapping ones serialize (and say whom they wait for), a waiting run
// is not overtaken by later overlapping runs, queued runs can be aborted, max_parallel_runs caps
// the parallelism, and shutdown with several runs in flight reverts everything.

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "tests/scenarios/engine/engine_fixture.h"

namespace fabric_chaos::scenarios {
namespace {

using nlohmann::json;

class EngineScheduler : public EngineFixture {};

TEST_F(EngineScheduler, RunsOnDisjointTargetsOverlapInTime) {
  engine_->start();
  auto a = engine_->submit(hostsScenario({"h0", "h1"}, "h1", 600), "netns-lab");
  auto b = engine_->submit(hostsScenario({"h2", "h3"}, "h3", 600), "netns-lab");
  ASSERT_TRUE(a.isOk() && b.isOk());
  // Both faults in force at the same moment: both runs are in their fault window together.
  EXPECT_TRUE(waitForActiveFaults(2, 10000)) << "the two runs never had a fault on together";
  // Both are visible live while they run.
  auto live_a = engine_->live(*a);
  auto live_b = engine_->live(*b);
  ASSERT_TRUE(live_a.has_value());
  ASSERT_TRUE(live_b.has_value());
  EXPECT_EQ(live_a->run_id, *a);
  EXPECT_EQ(live_b->run_id, *b);
  EXPECT_EQ(live_a->state, "injecting");
  EXPECT_EQ(live_b->state, "injecting");
  EXPECT_EQ(waitForState(*a, kFinalStates, 15000), "passed");
  EXPECT_EQ(waitForState(*b, kFinalStates, 15000), "passed");
  EXPECT_FALSE(engine_->live(*a).has_value());

  // Each started before the other finished.
  EXPECT_LT(transitionMs(*a, "preparing"), transitionMs(*b, "passed"));
  EXPECT_LT(transitionMs(*b, "preparing"), transitionMs(*a, "passed"));
  // Neither ever waited, and their ranks listened on different ports.
  EXPECT_TRUE(eventsOfKind(*a, "waiting").empty());
  EXPECT_TRUE(eventsOfKind(*b, "waiting").empty());
  auto started_a = eventsOfKind(*a, "workload_started");
  auto started_b = eventsOfKind(*b, "workload_started");
  ASSERT_EQ(started_a.size(), 1u);
  ASSERT_EQ(started_b.size(), 1u);
  EXPECT_NE(started_a[0].detail["port"], started_b[0].detail["port"]);
  EXPECT_EQ(agent_.activeFaults(), 0u);
  EXPECT_TRUE(store_->unrevertedJournal()->empty());
}

TEST_F(EngineScheduler, OverlappingRunsSerializeAndSayWhomTheyWaitFor) {
  engine_->start();
  // Both use every host of the fabric.
  auto a = engine_->submit(flapScenario(1), "netns-lab");
  auto b = engine_->submit(flapScenario(1), "netns-lab");
  ASSERT_TRUE(a.isOk() && b.isOk());
  ASSERT_EQ(waitForState(*a, {"injecting"}, 10000), "injecting");
  // b is still queued, and says why.
  EXPECT_EQ(store_->getRun(*b)->state, "queued");
  EXPECT_FALSE(engine_->live(*b).has_value());
  const json waiting = store_->getRun(*b)->attributes["waiting_for"];
  EXPECT_EQ(waiting["runs"], json::array({*a})) << waiting.dump();
  EXPECT_NE(waiting["reason"].get<std::string>().find("held by run " + std::to_string(*a)),
            std::string::npos)
      << waiting.dump();
  EXPECT_FALSE(waiting["targets"].empty());

  EXPECT_EQ(waitForState(*a, kFinalStates, 15000), "passed");
  EXPECT_EQ(waitForState(*b, kFinalStates, 15000), "passed");
  EXPECT_GE(transitionMs(*b, "preparing"), transitionMs(*a, "passed"));
  // Once it started the attribute is cleared; the event stays in its history.
  EXPECT_TRUE(store_->getRun(*b)->attributes["waiting_for"].is_null());
  auto waits = eventsOfKind(*b, "waiting");
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0].detail["runs"], json::array({*a}));
}

TEST_F(EngineScheduler, AWaitingRunIsNotOvertakenByALaterOverlappingRun) {
  engine_->start();
  // a holds h0, h1; b wants every host and waits for a; c wants only h2, h3, which nobody holds,
  // but b wants them too and was first.
  auto a = engine_->submit(hostsScenario({"h0", "h1"}, "h1", 800), "netns-lab");
  ASSERT_TRUE(a.isOk());
  ASSERT_EQ(waitForState(*a, {"baseline", "injecting"}, 10000).empty(), false);
  auto b = engine_->submit(flapScenario(1), "netns-lab");
  auto c = engine_->submit(hostsScenario({"h2", "h3"}, "h3", 200), "netns-lab");
  ASSERT_TRUE(b.isOk() && c.isOk());

  EXPECT_EQ(waitForState(*c, kFinalStates, 30000), "passed");
  EXPECT_EQ(waitForState(*b, kFinalStates, 30000), "passed");
  EXPECT_EQ(waitForState(*a, kFinalStates, 30000), "passed");
  // c started only after b had finished, and b only after a.
  EXPECT_GE(transitionMs(*b, "preparing"), transitionMs(*a, "passed"));
  EXPECT_GE(transitionMs(*c, "preparing"), transitionMs(*b, "passed"));
  auto waits = eventsOfKind(*c, "waiting");
  ASSERT_FALSE(waits.empty());
  EXPECT_EQ(waits[0].detail["queued_before"], json::array({*b})) << waits[0].detail.dump();
}

TEST_F(EngineScheduler, AQueuedRunWaitingForTargetsCanBeAborted) {
  engine_->start();
  auto a = engine_->submit(hostsScenario({"h0", "h1"}, "h1", 800), "netns-lab");
  auto b = engine_->submit(hostsScenario({"h1", "h2"}, "h2", 200), "netns-lab");
  ASSERT_TRUE(a.isOk() && b.isOk());
  ASSERT_EQ(waitForState(*a, {"injecting"}, 10000), "injecting");
  ASSERT_EQ(store_->getRun(*b)->state, "queued");
  EXPECT_TRUE(engine_->abort(*b).isOk());
  auto run_b = store_->getRun(*b);
  EXPECT_EQ(run_b->state, "aborted");
  EXPECT_EQ(run_b->error, "aborted before it started");
  EXPECT_EQ(engine_->abort(*b).code(), core::StatusCode::kFailedPrecondition);
  // a is unaffected.
  EXPECT_EQ(waitForState(*a, kFinalStates, 15000), "passed");
  // b never started: its only transitions are queued and aborted.
  auto transitions = store_->runTransitions(*b);
  ASSERT_TRUE(transitions.isOk());
  ASSERT_EQ(transitions->size(), 2u) << transitions->dump();
  EXPECT_EQ((*transitions)[1]["state"], "aborted");
  EXPECT_TRUE(eventsOfKind(*b, "workload_started").empty());
}

class EngineSchedulerCap : public EngineFixture {
 protected:
  EngineOptions options() override {
    EngineOptions o{5000, 17000, 1000};
    o.max_parallel_runs = 1;
    return o;
  }
};

TEST_F(EngineSchedulerCap, MaxParallelRunsCapsDisjointRunsToo) {
  engine_->start();
  auto a = engine_->submit(hostsScenario({"h0", "h1"}, "h1", 300), "netns-lab");
  auto b = engine_->submit(hostsScenario({"h2", "h3"}, "h3", 300), "netns-lab");
  ASSERT_TRUE(a.isOk() && b.isOk());
  ASSERT_EQ(waitForState(*a, {"baseline", "injecting"}, 10000).empty(), false);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const json waiting = store_->getRun(*b)->attributes["waiting_for"];
  EXPECT_NE(waiting.value("reason", "").find("max_parallel_runs 1"), std::string::npos)
      << waiting.dump();
  EXPECT_EQ(waitForState(*a, kFinalStates, 15000), "passed");
  EXPECT_EQ(waitForState(*b, kFinalStates, 15000), "passed");
  EXPECT_GE(transitionMs(*b, "preparing"), transitionMs(*a, "passed"));
}

TEST_F(EngineScheduler, ShutdownWithSeveralRunsInFlightRevertsEverything) {
  engine_->start();
  auto a = engine_->submit(hostsScenario({"h0", "h1"}, "h1", 20000), "netns-lab");
  auto b = engine_->submit(hostsScenario({"h2", "h3"}, "h3", 20000), "netns-lab");
  auto queued = engine_->submit(flapScenario(1), "netns-lab");  // waits for both
  ASSERT_TRUE(a.isOk() && b.isOk() && queued.isOk());
  ASSERT_TRUE(waitForActiveFaults(2, 10000));
  const int64_t t0 = core::steadyNowNs();
  engine_->shutdown();
  const double shutdown_ms = static_cast<double>(core::steadyNowNs() - t0) / 1e6;
  EXPECT_EQ(agent_.activeFaults(), 0u);
  EXPECT_TRUE(store_->unrevertedJournal()->empty());
  for (int64_t id : {*a, *b}) {
    auto run = store_->getRun(id);
    EXPECT_EQ(run->state, "aborted") << id;
    EXPECT_EQ(run->result["stop"]["reason"], "abort_request") << run->result.dump(2);
    EXPECT_EQ(run->result["stop"]["faults_reverted"], 1);
  }
  EXPECT_EQ(store_->getRun(*queued)->state, "aborted");
  EXPECT_EQ(store_->getRun(*queued)->error, "serve shut down before the run started");
  EXPECT_LT(shutdown_ms, 5000);
  EXPECT_EQ(engine_->submit(flapScenario(1), "netns-lab").status().code(),
            core::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace fabric_chaos::scenarios
