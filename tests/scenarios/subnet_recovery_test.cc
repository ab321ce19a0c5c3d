// What a step's subnet figures make of the IB probes' events: the first new master after the
// fault, the longest outage that began in the window (and one that never ended), LID moves, the
// routes the probe read from the switches (broken, restored, LFT entries rewritten), and the
// max_sm_takeover_ms and max_reroute_ms gates over them. Pure.

#include "scenarios/subnet_recovery.h"

#include <gtest/gtest.h>

#include "scenarios/analysis.h"

namespace fabric_chaos::scenarios {
namespace {

using nlohmann::json;

// A step of an IB run with its subnet figures.
StepMetrics ibStep(int step, SubnetRecovery subnet) {
  StepMetrics m;
  m.step = step;
  m.subnet = std::move(subnet);
  return m;
}

SubnetEvent at(double t_ms, int rank, SubnetEventKind kind, std::string master = "",
               std::string old_master = "") {
  SubnetEvent e;
  e.t_ms = t_ms;
  e.rank = rank;
  e.kind = kind;
  e.new_master = std::move(master);
  e.old_master = std::move(old_master);
  return e;
}

TEST(SubnetRecovery, ReadsTheProbesEventsAsTheStoreKeepsThem) {
  auto changed = subnetEventOf("sm_master_changed", 6690,
                               {{"rank", 2}, {"from", "0x01"}, {"to", "0x0000000000100005"}});
  ASSERT_TRUE(changed.has_value());
  EXPECT_EQ(changed->kind, SubnetEventKind::kMasterChanged);
  EXPECT_EQ(changed->rank, 2);
  EXPECT_EQ(changed->new_master, "0x0000000000100005");
  EXPECT_EQ(changed->old_master, "0x01");
  EXPECT_EQ(subnetEventOf("sa_unavailable", 1, {{"rank", 0}})->kind,
            SubnetEventKind::kSaUnavailable);
  EXPECT_EQ(subnetEventOf("lid_changed", 1, json::object())->kind, SubnetEventKind::kLidChanged);
  EXPECT_FALSE(subnetEventOf("fault_applied", 1, json::object()).has_value());
}

TEST(SubnetRecovery, AFailoverIsItsOutageAndItsNewMaster) {
  // A kill at 3090 ms, revert at 11090: every probe loses the SA at ~3160 and gets it back at
  // ~6690 from sm1; sm0 takes mastership back after the revert (outside the fault window, but
  // before `until`: the first change is the one reported).
  const std::vector<SubnetEvent> events = {
      at(3160, 0, SubnetEventKind::kSaUnavailable),
      at(3180, 1, SubnetEventKind::kSaUnavailable),
      at(6690, 0, SubnetEventKind::kSaAvailable),
      at(6690, 0, SubnetEventKind::kMasterChanged, "0x0000000000100005", "0x0000000000100001"),
      at(6720, 1, SubnetEventKind::kSaAvailable),
      at(11200, 0, SubnetEventKind::kMasterChanged, "0x0000000000100001", "0x0000000000100005"),
  };
  const SubnetRecovery r = subnetRecovery(events, 3090, 11090, 16090);
  ASSERT_TRUE(r.time_to_new_master_ms.has_value());
  EXPECT_DOUBLE_EQ(*r.time_to_new_master_ms, 3600);
  EXPECT_EQ(r.new_master, "0x0000000000100005");
  EXPECT_DOUBLE_EQ(r.sa_outage_ms, 3540);  // rank 1's, the longest
  EXPECT_TRUE(r.sa_restored);
  EXPECT_EQ(r.lid_changes, 0);
  EXPECT_EQ(r.master_returned, std::optional<bool>(true));  // sm0 is master again at 11200
  const json doc = toJson(r);
  EXPECT_EQ(doc["sa_outage_ms"], 3540);
  EXPECT_EQ(doc["master_returned"], true);
  // Observed only until 10000: the standby still rules, and the figures say so.
  const SubnetRecovery early = subnetRecovery(events, 3090, 9090, 10000);
  EXPECT_EQ(early.master_returned, std::optional<bool>(false));
  EXPECT_EQ(doc["new_master"], "0x0000000000100005");
}

TEST(SubnetRecovery, AnOutageThatNeverEndsAndEventsOutsideTheStep) {
  const std::vector<SubnetEvent> events = {
      at(500, 0, SubnetEventKind::kSaUnavailable),  // before the step: not its outage
      at(900, 0, SubnetEventKind::kSaAvailable),
      at(2000, 1, SubnetEventKind::kSaUnavailable),
      at(2500, 1, SubnetEventKind::kLidChanged),
      at(9000, 0, SubnetEventKind::kLidChanged),  // the next step's
  };
  const SubnetRecovery r = subnetRecovery(events, 1000, 5000, 8000);
  EXPECT_FALSE(r.time_to_new_master_ms.has_value());
  EXPECT_FALSE(r.sa_restored);
  EXPECT_DOUBLE_EQ(r.sa_outage_ms, 6000);  // 2000 until the end of what the step owns
  EXPECT_EQ(r.lid_changes, 1);
  EXPECT_TRUE(toJson(r)["time_to_new_master_ms"].is_null());
  EXPECT_FALSE(r.master_returned.has_value());
  EXPECT_TRUE(toJson(r)["master_returned"].is_null());
}

TEST(SubnetRecovery, TheTakeoverGateJudgesEveryStepsNewMasterAndOpenOutages) {
  RunAnalysis analysis;
  SubnetRecovery quick;
  quick.time_to_new_master_ms = 3072.9;
  quick.new_master = "0x05";
  quick.sa_outage_ms = 3021;
  // Step 1 is a link fault: mastership never moved.
  analysis.steps = {ibStep(0, quick), ibStep(1, SubnetRecovery{})};
  Gates gates;
  gates.require_survival = false;
  gates.max_sm_takeover_ms = 5000;
  auto verdicts = checkGates(gates, analysis);
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_TRUE(verdicts[0].passed) << verdicts[0].detail;
  EXPECT_EQ(verdicts[0].gate, "max_sm_takeover_ms");

  gates.max_sm_takeover_ms = 2000;
  verdicts = checkGates(gates, analysis);
  EXPECT_FALSE(verdicts[0].passed);
  EXPECT_NE(verdicts[0].detail.find("step 0: the new master answered after"), std::string::npos)
      << verdicts[0].detail;

  analysis.steps[1].subnet->sa_restored = false;
  analysis.steps[1].subnet->sa_outage_ms = 60000;
  gates.max_sm_takeover_ms = 5000;
  verdicts = checkGates(gates, analysis);
  EXPECT_FALSE(verdicts[0].passed);
  EXPECT_NE(verdicts[0].detail.find("step 1 left the SA unanswered"), std::string::npos)
      << verdicts[0].detail;

  analysis.steps[0].subnet.reset();  // an Ethernet run given an IB gate
  verdicts = checkGates(gates, analysis);
  EXPECT_NE(verdicts[0].detail.find("step 0: no IB probe measured the subnet"), std::string::npos);
}

TEST(SubnetRecovery, ReadsTheRouteEventsWithTheirCounts) {
  auto broken = subnetEventOf("routes_broken", 3110,
                              {{"rank", 0}, {"unroutable", 4}, {"pairs", 12}, {"problem", "x"}});
  ASSERT_TRUE(broken.has_value());
  EXPECT_EQ(broken->kind, SubnetEventKind::kRoutesBroken);
  EXPECT_EQ(broken->unroutable, 4);
  auto lft = subnetEventOf("lft_changed", 3120, {{"entries", 10}, {"of", 32}, {"from_first", 10}});
  ASSERT_TRUE(lft.has_value());
  EXPECT_EQ(lft->kind, SubnetEventKind::kLftChanged);
  EXPECT_EQ(lft->entries, 10);
  EXPECT_EQ(lft->of, 32);
  EXPECT_EQ(lft->from_first, 10);
  EXPECT_EQ(subnetEventOf("routes_restored", 1, {{"after_ms", 15}})->kind,
            SubnetEventKind::kRoutesRestored);
  // A detail without the counts (or with strings) reads as zeros, not as an exception.
  EXPECT_EQ(subnetEventOf("lft_changed", 1, {{"entries", "ten"}})->entries, 0);
  EXPECT_EQ(subnetEventOf("routes_broken", 1, json::array())->unroutable, 0);
}

TEST(SubnetRecovery, ALinkDownIsTheTimeUntilEveryPairIsRoutableAndTheEntriesRewritten) {
  // As measured in the lab: the cable drops at 3000, the probe's next pass finds 4 of 12 pairs
  // unroutable, the SM's re-route rewrites 10 of 32 entries and mends them; at the revert (13000)
  // the cable returns and the SM rewrites the same 10 back.
  SubnetEvent broken = at(3012, 0, SubnetEventKind::kRoutesBroken);
  broken.unroutable = 4;
  SubnetEvent rerouted = at(3030, 0, SubnetEventKind::kLftChanged);
  rerouted.entries = 10;
  rerouted.of = 32;
  rerouted.from_first = 10;
  SubnetEvent back = at(13040, 0, SubnetEventKind::kLftChanged);
  back.entries = 10;
  back.of = 32;
  back.from_first = 0;
  const std::vector<SubnetEvent> events = {broken, rerouted,
                                           at(3030, 0, SubnetEventKind::kRoutesRestored), back};
  const SubnetRecovery r = subnetRecovery(events, 3000, 13000, 18000);
  ASSERT_TRUE(r.time_to_routable_ms.has_value());
  EXPECT_DOUBLE_EQ(*r.time_to_routable_ms, 30);
  EXPECT_TRUE(r.routes_restored);
  EXPECT_EQ(r.unroutable_pairs, 4);
  EXPECT_EQ(r.lft_entries_changed, 20);
  EXPECT_EQ(r.lft_entries_differ_after, 0);  // the original routing is back
  const json doc = toJson(r);
  EXPECT_EQ(doc["time_to_routable_ms"], 30);
  EXPECT_DOUBLE_EQ(doc["lft_share_changed"].get<double>(), 20.0 / 32);
  EXPECT_EQ(doc["unroutable_pairs"], 4);

  // Until the revert only: the re-route is there, the way back is the next step's.
  const SubnetRecovery first_half = subnetRecovery(events, 3000, 13000, 13000);
  EXPECT_EQ(first_half.lft_entries_changed, 10);
  EXPECT_EQ(first_half.lft_entries_differ_after, 10);

  // A break that is never mended; and a step whose routes never broke has no reroute time.
  const SubnetRecovery open = subnetRecovery({broken}, 3000, 13000, 18000);
  EXPECT_FALSE(open.routes_restored);
  EXPECT_FALSE(open.time_to_routable_ms.has_value());
  const SubnetRecovery calm = subnetRecovery({rerouted}, 3000, 13000, 18000);
  EXPECT_FALSE(calm.time_to_routable_ms.has_value());
  EXPECT_TRUE(calm.routes_restored);
  EXPECT_TRUE(toJson(calm)["time_to_routable_ms"].is_null());
  EXPECT_EQ(toJson(SubnetRecovery{})["lft_share_changed"], 0.0);
}

TEST(SubnetRecovery, AFlapCountsTheLastRestoration) {
  const std::vector<SubnetEvent> events = {
      at(1010, 0, SubnetEventKind::kRoutesBroken), at(1040, 0, SubnetEventKind::kRoutesRestored),
      at(2010, 0, SubnetEventKind::kRoutesBroken), at(2060, 0, SubnetEventKind::kRoutesRestored),
      at(9000, 0, SubnetEventKind::kRoutesBroken),  // after the window: the revert's, not ours
  };
  const SubnetRecovery r = subnetRecovery(events, 1000, 3000, 10000);
  ASSERT_TRUE(r.time_to_routable_ms.has_value());
  EXPECT_DOUBLE_EQ(*r.time_to_routable_ms, 1060);
  EXPECT_TRUE(r.routes_restored);
}

TEST(SubnetRecovery, TheRerouteGateJudgesEveryStepThatBrokeRoutes) {
  RunAnalysis analysis;
  SubnetRecovery rerouted;
  rerouted.time_to_routable_ms = 30;
  rerouted.unroutable_pairs = 4;
  // Step 1 is an SM fault: no route broke.
  analysis.steps = {ibStep(0, rerouted), ibStep(1, SubnetRecovery{})};
  Gates gates;
  gates.require_survival = false;
  gates.max_reroute_ms = 500;
  auto verdicts = checkGates(gates, analysis);
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_EQ(verdicts[0].gate, "max_reroute_ms");
  EXPECT_TRUE(verdicts[0].passed) << verdicts[0].detail;
  EXPECT_NE(verdicts[0].detail.find("slowest 30.0 ms"), std::string::npos) << verdicts[0].detail;

  gates.max_reroute_ms = 20;
  verdicts = checkGates(gates, analysis);
  EXPECT_FALSE(verdicts[0].passed);
  EXPECT_NE(verdicts[0].detail.find("step 0: every pair was routable again after 30.0 ms"),
            std::string::npos)
      << verdicts[0].detail;

  gates.max_reroute_ms = 500;
  analysis.steps[1].subnet->routes_restored = false;
  analysis.steps[1].subnet->unroutable_pairs = 6;
  verdicts = checkGates(gates, analysis);
  EXPECT_FALSE(verdicts[0].passed);
  EXPECT_NE(verdicts[0].detail.find("step 1 left 6 channel-adapter pairs unroutable"),
            std::string::npos)
      << verdicts[0].detail;
}

}  // namespace
}  // namespace fabric_chaos::scenarios
