// TargetLocks (who may start, who waits and why) and runTargets (what a run holds), table-driven;
// and the low-busbw watch and stop-message wording of stop_conditions.h.

#include "scenarios/engine/target_locks.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scenarios/engine/stop_conditions.h"
#include "tests/fakes/fake_services.h"

namespace fabric_chaos::scenarios {
namespace {

using nlohmann::json;

// One step of a scheduling story: enqueue / release / dequeue, then admit(), then what started
// and who waits on whom.
struct Op {
  enum Kind { kEnqueue, kRelease, kDequeue } kind;
  int64_t run = 0;
  std::set<std::string> targets = {};
};

struct Wait {
  int64_t run;
  std::vector<int64_t> holders;
  std::vector<int64_t> ahead;
  bool capacity = false;
};

struct Step {
  std::vector<Op> ops;
  std::vector<int64_t> started;
  std::vector<Wait> waits;
};

struct LockCase {
  std::string name;
  int max_running;
  std::vector<Step> steps;
};

Op enq(int64_t run, std::set<std::string> targets) { return {Op::kEnqueue, run, targets}; }
Op rel(int64_t run) { return {Op::kRelease, run}; }
Op deq(int64_t run) { return {Op::kDequeue, run}; }

std::vector<LockCase> lockCases() {
  return {
      {"DisjointRunsStartTogether",
       4,
       {{{enq(1, {"a", "b"}), enq(2, {"c"}), enq(3, {"d", "e"})}, {1, 2, 3}, {}}}},
      {"OverlappingRunsSerialize",
       4,
       {{{enq(1, {"h0", "h1"}), enq(2, {"h1", "h2"})}, {1}, {{2, {1}, {}}}}, {{rel(1)}, {2}, {}}}},
      {"ADisjointLaterRunOvertakesAWaitingOne",
       4,
       {{{enq(1, {"h0", "h1"}), enq(2, {"h1"}), enq(3, {"h2", "h3"})}, {1, 3}, {{2, {1}, {}}}}}},
      {"AWaitingRunIsNotJumpedByALaterOverlappingOne",
       4,
       // 3 overlaps only 2 (waiting for 1) on h2, which nobody holds: it must still queue behind 2.
       {{{enq(1, {"h1"}), enq(2, {"h1", "h2"}), enq(3, {"h2"})}, {1}, {{2, {1}, {}}, {3, {}, {2}}}},
        // 1 ends; 4 arrives wanting h1 too, but 2 was first.
        {{enq(4, {"h1"}), rel(1)}, {2}, {{3, {2}, {}}, {4, {2}, {}}}},
        {{rel(2)}, {3, 4}, {}}}},
      {"NoStarvationUnderAStreamOfOverlappingRuns",
       4,
       {{{enq(1, {"x"}), enq(2, {"x", "y"})}, {1}, {{2, {1}, {}}}},
        // A stream of short runs on y alone keeps arriving; none may take y before 2 has run.
        {{enq(3, {"y"})}, {}, {{2, {1}, {}}, {3, {}, {2}}}},
        {{rel(1), enq(4, {"y"})}, {2}, {{3, {2}, {}}, {4, {2}, {3}}}},
        {{rel(2)}, {3}, {{4, {3}, {}}}}}},
      {"TheCapCountsRunningRuns",
       2,
       {{{enq(1, {"a"}), enq(2, {"b"}), enq(3, {"c"})}, {1, 2}, {{3, {}, {}, true}}},
        {{rel(2)}, {3}, {}}}},
      {"ARunWithoutTargetsConflictsWithNothing",
       4,
       {{{enq(1, {"a"}), enq(2, {}), enq(3, {"a"})}, {1, 2}, {{3, {1}, {}}}}}},
      {"DequeuingAWaitingRunFreesItsReservation",
       4,
       {{{enq(1, {"a"}), enq(2, {"a", "b"}), enq(3, {"b"})}, {1}, {{2, {1}, {}}, {3, {}, {2}}}},
        {{deq(2)}, {3}, {}}}},
  };
}

class TargetLocksTable : public ::testing::TestWithParam<LockCase> {};

TEST_P(TargetLocksTable, StartsAndWaitsAsExpected) {
  const LockCase& c = GetParam();
  TargetLocks locks(c.max_running);
  for (size_t i = 0; i < c.steps.size(); ++i) {
    const Step& step = c.steps[i];
    for (const Op& op : step.ops) {
      switch (op.kind) {
        case Op::kEnqueue:
          locks.enqueue(op.run, op.targets);
          break;
        case Op::kRelease:
          locks.release(op.run);
          break;
        case Op::kDequeue:
          EXPECT_TRUE(locks.dequeue(op.run));
          break;
      }
    }
    EXPECT_EQ(locks.admit(), step.started) << "step " << i;
    std::map<int64_t, WaitReason> expected;
    for (const Wait& w : step.waits) {
      WaitReason r;
      r.holders = w.holders;
      r.ahead = w.ahead;
      r.capacity = w.capacity;
      expected[w.run] = r;
    }
    ASSERT_EQ(locks.waiting().size(), expected.size()) << "step " << i;
    for (const auto& [run, reason] : locks.waiting()) {
      ASSERT_EQ(expected.count(run), 1u) << "step " << i << ": run " << run << " should not wait";
      EXPECT_EQ(reason.holders, expected[run].holders) << "step " << i << " run " << run;
      EXPECT_EQ(reason.ahead, expected[run].ahead) << "step " << i << " run " << run;
      EXPECT_EQ(reason.capacity, expected[run].capacity) << "step " << i << " run " << run;
      EXPECT_EQ(reason.targets.empty(), reason.capacity) << "step " << i << " run " << run;
      EXPECT_TRUE(locks.isQueued(run));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Table, TargetLocksTable, ::testing::ValuesIn(lockCases()),
                         [](const ::testing::TestParamInfo<LockCase>& info) {
                           return info.param.name;
                         });

TEST(TargetLocks, NamesTheContendedTargets) {
  TargetLocks locks(4);
  locks.enqueue(1, {"f/host/h0", "f/host/h1"});
  locks.enqueue(2, {"f/host/h1", "f/host/h2"});
  ASSERT_EQ(locks.admit(), std::vector<int64_t>{1});
  EXPECT_EQ(locks.waiting().at(2).targets, std::vector<std::string>{"f/host/h1"});
  EXPECT_FALSE(locks.dequeue(1));  // running, not queued
  EXPECT_EQ(locks.running(), std::vector<int64_t>{1});
  EXPECT_EQ(locks.queued(), std::vector<int64_t>{2});
}

Scenario scenarioFrom(const json& doc) {
  auto parsed = parseScenario(doc);
  EXPECT_TRUE(parsed.isOk()) << parsed.status().toString();
  return parsed.value();
}

TEST(RunTargets, Table) {
  const Fabric fabric = fakes::FakeFabricCatalog::netnsLab(4, "lab");
  struct Case {
    std::string name;
    json scenario;
    std::set<std::string> targets;
  };
  const std::vector<Case> cases = {
      {"EveryHostByDefault",
       {{"version", 1}, {"name", "s"}},
       {"lab/host/h0", "lab/host/h1", "lab/host/h2", "lab/host/h3"}},
      {"WorkloadHostsOnly",
       {{"version", 1}, {"name", "s"}, {"workload", {{"hosts", {"h2", "h3"}}}}},
       {"lab/host/h2", "lab/host/h3"}},
      {"ASwitchPortAndTheHostItBelongsTo",
       {{"version", 1},
        {"name", "s"},
        {"workload", {{"hosts", {"h0", "h1"}}}},
        {"steps",
         {{{"kind", "link_flap"}, {"target", {{"host", "h3"}}}, {"params", {{"down_ms", 10}}}}}}},
       {"lab/host/h0", "lab/host/h1", "lab/host/h3", "lab/if/fc-sw0/p3"}},
      {"AHostSideNic",
       {{"version", 1},
        {"name", "s"},
        {"workload", {{"hosts", {"h0", "h1"}}}},
        {"steps",
         {{{"kind", "packet_loss"},
           {"target", {{"host", "h1"}, {"side", "host"}}},
           {"duration_ms", 100},
           {"params", {{"percent", 5}}}}}}},
       {"lab/host/h0", "lab/host/h1", "lab/if/fc-h1/eth0"}},
      {"EveryLinkALabelSelects",
       {{"version", 1},
        {"name", "s"},
        {"workload", {{"hosts", {"h0", "h1"}}}},
        {"steps",
         {{{"kind", "link_flap"},
           {"target", {{"labels", {{"rack", "r1"}}}}},
           {"params", {{"down_ms", 10}}}}}}},
       {"lab/host/h0", "lab/host/h1", "lab/host/h2", "lab/host/h3", "lab/if/fc-sw0/p2",
        "lab/if/fc-sw0/p3"}},
  };
  for (const auto& c : cases) {
    auto targets = runTargets(scenarioFrom(c.scenario), fabric);
    ASSERT_TRUE(targets.isOk()) << c.name << ": " << targets.status().toString();
    EXPECT_EQ(*targets, c.targets) << c.name;
  }
  Scenario unknown = scenarioFrom(
      {{"version", 1},
       {"name", "s"},
       {"steps",
        {{{"kind", "link_flap"}, {"target", {{"host", "h9"}}}, {"params", {{"down_ms", 10}}}}}}});
  EXPECT_EQ(runTargets(unknown, fabric).status().code(), core::StatusCode::kUnprocessable);
}

TEST(LowBusbwWatch, Table) {
  // threshold 1 GB/s for 100 ms, watching from t=1000.
  struct Iteration {
    double end_ms;
    double busbw;
  };
  struct Case {
    std::string name;
    std::vector<Iteration> iterations;
    double stretch_start;
  };
  const std::vector<Case> cases = {
      {"NoIterationAtAll", {}, 1000},
      {"GoodIterationsMoveTheStretch", {{1010, 2}, {1050, 1.0}}, 1050},
      {"SlowIterationsDoNot", {{1010, 2}, {1050, 0.5}, {1090, 0.99}}, 1010},
      {"IterationsEndingBeforeTheWatchDoNotCount", {{900, 5}}, 1000},
      {"LateReportsDoNotMoveItBack", {{1200, 2}, {1100, 2}}, 1200},
  };
  for (const auto& c : cases) {
    LowBusbwWatch watch(1.0, 100, 1000);
    for (const auto& it : c.iterations) watch.onIteration(it.end_ms, it.busbw);
    EXPECT_EQ(watch.stretchStartMs(), c.stretch_start) << c.name;
    EXPECT_EQ(watch.conditionMs(), c.stretch_start + 100) << c.name;
    EXPECT_FALSE(watch.holdsAt(c.stretch_start + 99.9)) << c.name;
    EXPECT_TRUE(watch.holdsAt(c.stretch_start + 100)) << c.name;
  }
}

TEST(StopMessages, Table) {
  EXPECT_EQ(percentText(0.05), "5%");
  EXPECT_EQ(percentText(0.5), "50%");
  EXPECT_EQ(percentText(0.07), "7%");
  EXPECT_EQ(percentText(0.125), "12.5%");
  EXPECT_EQ(busbwBelowText(0.05, 2000), "busbw below 5% of baseline for 2000 ms");
}

}  // namespace
}  // namespace fabric_chaos::scenarios
