#include "scenarios/plan.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace fabric_chaos::scenarios {
namespace {

using core::StatusCode;
using nlohmann::json;

Fabric testFabric() {
  Fabric fabric;
  fabric.name = "test-lab";
  fabric.kind = "netns";
  Switch sw{"sw0", "t-sw0", "br0", {}, {}, std::nullopt};
  for (int i = 0; i < 4; ++i) {
    const std::string name = "h" + std::to_string(i);
    fabric.hosts.push_back(Host{name,
                                "t-" + name,
                                "local",
                                {{"eth0", "10.200.0." + std::to_string(i + 1)}},
                                {{"rack", i < 2 ? "r0" : "r1"}},
                                ""});
    sw.ports.push_back("p" + std::to_string(i));
    fabric.links.push_back({name + "-sw0", name, "eth0", "sw0", "p" + std::to_string(i), {}});
  }
  fabric.switches.push_back(sw);
  return fabric;
}

FaultStep flap(const std::string& host, int64_t at_ms, json params, int64_t duration_ms = 0) {
  FaultStep step;
  step.kind = "link_flap";
  step.target.host = host;
  step.at_ms = at_ms;
  step.duration_ms = duration_ms;
  step.params = std::move(params);
  return step;
}

FaultStep loss(TargetSelector target, int64_t at_ms, int64_t duration_ms) {
  FaultStep step;
  step.kind = "packet_loss";
  step.target = std::move(target);
  step.at_ms = at_ms;
  step.duration_ms = duration_ms;
  step.params = {{"percent", 5}};
  return step;
}

TargetSelector host(const std::string& name) {
  TargetSelector s;
  s.host = name;
  return s;
}

using Phases = std::vector<std::pair<int64_t, int64_t>>;

Phases toPairs(const std::vector<FaultPhase>& phases) {
  Phases out;
  for (const FaultPhase& p : phases) out.emplace_back(p.apply_at_ms, p.revert_at_ms);
  return out;
}

TEST(StepPhasesTest, Table) {
  struct Case {
    std::string name;
    FaultStep step;
    Phases expected;
  };
  const std::vector<Case> cases = {
      {"FlapTwice",
       flap("h1", 0, {{"down_ms", 1000}, {"up_ms", 1000}, {"count", 2}}),
       {{0, 1000}, {2000, 3000}}},
      {"FlapDefaults", flap("h1", 0, {{"down_ms", 700}}), {{0, 700}}},
      {"UpDefaultsToDown",
       flap("h1", 0, {{"down_ms", 300}, {"count", 3}}),
       {{0, 300}, {600, 900}, {1200, 1500}}},
      {"Offset",
       flap("h1", 500, {{"down_ms", 100}, {"up_ms", 50}, {"count", 3}}),
       {{500, 600}, {650, 750}, {800, 900}}},
      {"MatchingDuration",
       flap("h1", 0, {{"down_ms", 100}, {"up_ms", 50}, {"count", 3}}, 3 * 100 + 2 * 50),
       {{0, 100}, {150, 250}, {300, 400}}},
      {"ExtraParamsLeftToTheInjector",
       flap("h1", 0, {{"down_ms", 10}, {"mode", "carrier"}}),
       {{0, 10}}},
      {"Loss", loss(host("h1"), 1000, 4000), {{1000, 5000}}},
  };
  for (const Case& c : cases) {
    auto phases = stepPhases(c.step, 0);
    ASSERT_TRUE(phases.isOk()) << c.name << ": " << phases.status().toString();
    EXPECT_EQ(toPairs(phases.value()), c.expected) << c.name;
  }
}

TEST(StepPhasesTest, Errors) {
  // A missing parameter or a wrong type is a 400; a value out of range or timing the engine
  // cannot run is a 422.
  struct Case {
    std::string name;
    FaultStep step;
    std::string message;
    StatusCode code = StatusCode::kUnprocessable;
  };
  constexpr StatusCode kShape = StatusCode::kInvalidArgument;
  const std::vector<Case> cases = {
      {"DownMissing", flap("h1", 0, {{"up_ms", 10}}),
       "steps[3].params.down_ms: required for link_flap", kShape},
      {"DownZero", flap("h1", 0, {{"down_ms", 0}}),
       "steps[3].params.down_ms: must be an integer in 1..600000"},
      {"DownTooLong", flap("h1", 0, {{"down_ms", 600001}}),
       "steps[3].params.down_ms: must be an integer in 1..600000"},
      {"DownFraction", flap("h1", 0, {{"down_ms", 10.5}}),
       "steps[3].params.down_ms: must be an integer in 1..600000", kShape},
      {"UpString", flap("h1", 0, {{"down_ms", 10}, {"up_ms", "10"}}),
       "steps[3].params.up_ms: must be an integer in 1..600000", kShape},
      {"CountZero", flap("h1", 0, {{"down_ms", 10}, {"count", 0}}),
       "steps[3].params.count: must be an integer in 1..1000"},
      {"CountTooMany", flap("h1", 0, {{"down_ms", 10}, {"count", 1001}}),
       "steps[3].params.count: must be an integer in 1..1000"},
      {"ParamsNotObject", flap("h1", 0, json::array()), "steps[3].params: must be an object",
       kShape},
      {"DurationMismatch", flap("h1", 0, {{"down_ms", 1000}, {"up_ms", 1000}, {"count", 2}}, 4000),
       "steps[3].duration_ms: 4000 does not match the link_flap pattern: count*down_ms + "
       "(count-1)*up_ms = 3000; omit duration_ms to derive it"},
      {"LossWithoutDuration", loss(host("h1"), 0, 0),
       "steps[3].duration_ms: must be > 0 for packet_loss"},
      {"NegativeAt", loss(host("h1"), -1, 10), "steps[3].at_ms: must be a non-negative integer"},
      {"HugeDuration", loss(host("h1"), 0, kMaxTimeMs + 1),
       "steps[3].duration_ms: must be at most 86400000"},
      // Phases the engine cannot honour are refused, with the reason.
      {"DownTooShortToHonour", flap("h1", 0, {{"down_ms", 5}}),
       "steps[3].params.down_ms: 5 ms is shorter than the engine can honour: a phase must last "
       "at least 10 ms (a netlink change and a timer wake-up take up to a few ms under load)"},
      {"UpTooShortToHonour", flap("h1", 0, {{"down_ms", 10}, {"up_ms", 9}, {"count", 2}}),
       "steps[3].params.up_ms: 9 ms is shorter than the engine can honour: a phase must last "
       "at least 10 ms (a netlink change and a timer wake-up take up to a few ms under load)"},
      {"LossTooShortToHonour", loss(host("h1"), 0, 3),
       "steps[3].duration_ms: 3 ms is shorter than the engine can honour: a phase must last at "
       "least 10 ms (a netlink change and a timer wake-up take up to a few ms under load)"},
  };
  for (const Case& c : cases) {
    auto phases = stepPhases(c.step, 3);
    ASSERT_FALSE(phases.isOk()) << c.name;
    EXPECT_EQ(phases.status().code(), c.code) << c.name;
    EXPECT_EQ(phases.status().message(), c.message) << c.name;
  }
}

TEST(PlanFaultsTest, FlapPatternTimingsAndTarget) {
  Scenario s;
  s.steps.push_back(flap("h1", 0, {{"down_ms", 1000}, {"up_ms", 1000}, {"count", 2}}));
  auto plan = planFaults(s, testFabric());
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  ASSERT_EQ(plan->size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const PlannedAction& a = (*plan)[i];
    EXPECT_EQ(a.step, 0);
    EXPECT_EQ(a.phase, i);
    EXPECT_EQ(a.kind, "link_flap");
    EXPECT_EQ(a.params["count"], 2);
    EXPECT_EQ(a.target.host, "h1");
    EXPECT_EQ(a.target.link_id, "h1-sw0");
    EXPECT_EQ(a.target.target, injectors::Target(injectors::InterfaceTarget{"t-sw0", "p1"}));
    EXPECT_EQ(a.target.side, LinkSide::kSwitch);
  }
  EXPECT_EQ((*plan)[0].apply_at_ms, 0);
  EXPECT_EQ((*plan)[0].revert_at_ms, 1000);
  EXPECT_EQ((*plan)[1].apply_at_ms, 2000);
  EXPECT_EQ((*plan)[1].revert_at_ms, 3000);
}

TEST(PlanFaultsTest, OneActionPerResolvedTarget) {
  Scenario s;
  TargetSelector rack;
  rack.labels = {{"rack", "r1"}};
  rack.side = LinkSide::kHost;
  s.steps.push_back(loss(rack, 200, 800));
  auto plan = planFaults(s, testFabric());
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  ASSERT_EQ(plan->size(), 2u);
  EXPECT_EQ((*plan)[0].target.host, "h2");
  EXPECT_EQ((*plan)[0].target.target,
            injectors::Target(injectors::InterfaceTarget{"t-h2", "eth0"}));
  EXPECT_EQ((*plan)[1].target.host, "h3");
  for (const PlannedAction& a : *plan) {
    EXPECT_EQ(a.phase, 0);
    EXPECT_EQ(a.apply_at_ms, 200);
    EXPECT_EQ(a.revert_at_ms, 1000);
    EXPECT_EQ(a.params["percent"], 5);
  }
}

TEST(PlanFaultsTest, SortedByApplyTimeThenStep) {
  Scenario s;
  s.steps.push_back(loss(host("h0"), 2500, 100));                       // step 0
  s.steps.push_back(flap("h1", 0, {{"down_ms", 1000}, {"count", 2}}));  // step 1: 0, 2000
  s.steps.push_back(loss(host("h2"), 2000, 500));                       // step 2
  s.steps.push_back(loss(host("h3"), 0, 100));                          // step 3
  auto plan = planFaults(s, testFabric());
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  std::vector<std::tuple<int64_t, int, int>> order;  // apply, step, phase
  for (const PlannedAction& a : *plan) order.emplace_back(a.apply_at_ms, a.step, a.phase);
  const std::vector<std::tuple<int64_t, int, int>> expected = {
      {0, 1, 0}, {0, 3, 0}, {2000, 1, 1}, {2000, 2, 0}, {2500, 0, 0}};
  EXPECT_EQ(order, expected);

  const std::vector<StepSpan> spans = stepSpans(plan.value());
  ASSERT_EQ(spans.size(), 4u);
  EXPECT_EQ(spans[0].step, 0);
  EXPECT_EQ(spans[0].start_ms, 2500);
  EXPECT_EQ(spans[0].end_ms, 2600);
  EXPECT_EQ(spans[1].step, 1);
  EXPECT_EQ(spans[1].start_ms, 0);
  EXPECT_EQ(spans[1].end_ms, 3000);
  EXPECT_EQ(spans[2].step, 2);
  EXPECT_EQ(spans[2].start_ms, 2000);
  EXPECT_EQ(spans[2].end_ms, 2500);
  EXPECT_EQ(spans[3].step, 3);
  EXPECT_EQ(spans[3].start_ms, 0);
  EXPECT_EQ(spans[3].end_ms, 100);
}

TEST(PlanFaultsTest, SpansCoverEveryTarget) {
  std::vector<PlannedAction> actions(3);
  actions[0] = PlannedAction{2, 0, "x", json::object(), {}, 100, 400};
  actions[1] = PlannedAction{2, 1, "x", json::object(), {}, 50, 300};
  actions[2] = PlannedAction{2, 1, "x", json::object(), {}, 500, 700};
  const std::vector<StepSpan> spans = stepSpans(actions);
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].step, 2);
  EXPECT_EQ(spans[0].start_ms, 50);
  EXPECT_EQ(spans[0].end_ms, 700);
  EXPECT_TRUE(stepSpans({}).empty());
}

TEST(PlanFaultsTest, EmptyScenarioHasNoActions) {
  auto plan = planFaults(Scenario{}, testFabric());
  ASSERT_TRUE(plan.isOk());
  EXPECT_TRUE(plan->empty());
}

TEST(PlanFaultsTest, Errors) {
  Scenario s;
  s.steps.push_back(loss(host("h0"), 0, 100));
  s.steps.push_back(loss(host("h9"), 0, 100));
  auto plan = planFaults(s, testFabric());
  ASSERT_FALSE(plan.isOk());
  EXPECT_EQ(plan.status().code(), StatusCode::kUnprocessable);
  EXPECT_EQ(plan.status().message(), "steps[1].target: target host h9 is not in fabric test-lab");

  s.steps[1] = flap("h1", 0, {{"down_ms", 1000}, {"count", 2}}, 2000);
  plan = planFaults(s, testFabric());
  ASSERT_FALSE(plan.isOk());
  EXPECT_EQ(plan.status().code(), StatusCode::kUnprocessable);
  EXPECT_EQ(plan.status().message().rfind("steps[1].duration_ms: 2000 does not match", 0), 0u)
      << plan.status().message();
}

}  // namespace
}  // namespace fabric_chaos::scenarios
