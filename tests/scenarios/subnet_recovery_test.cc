// What a step's subnet figures make of the IB probes' events: the first new master after the
// fault, the longest outage that began in the window (and one that never ended), LID moves, and
// the max_sm_takeover_ms gate over them. Pure.

#include "scenarios/subnet_recovery.h"

#include <gtest/gtest.h>

#include "scenarios/analysis.h"

namespace fabric_chaos::scenarios {
namespace {

using nlohmann::json;

SubnetEvent at(double t_ms, int rank, SubnetEventKind kind, std::string master = "") {
  return SubnetEvent{t_ms, rank, kind, std::move(master)};
}

TEST(SubnetRecovery, ReadsTheProbesEventsAsTheStoreKeepsThem) {
  auto changed = subnetEventOf("sm_master_changed", 6690,
                               {{"rank", 2}, {"from", "0x01"}, {"to", "0x0000000000100005"}});
  ASSERT_TRUE(changed.has_value());
  EXPECT_EQ(changed->kind, SubnetEventKind::kMasterChanged);
  EXPECT_EQ(changed->rank, 2);
  EXPECT_EQ(changed->new_master, "0x0000000000100005");
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
      at(6690, 0, SubnetEventKind::kMasterChanged, "0x0000000000100005"),
      at(6720, 1, SubnetEventKind::kSaAvailable),
      at(11200, 0, SubnetEventKind::kMasterChanged, "0x0000000000100001"),
  };
  const SubnetRecovery r = subnetRecovery(events, 3090, 11090, 16090);
  ASSERT_TRUE(r.time_to_new_master_ms.has_value());
  EXPECT_DOUBLE_EQ(*r.time_to_new_master_ms, 3600);
  EXPECT_EQ(r.new_master, "0x0000000000100005");
  EXPECT_DOUBLE_EQ(r.sa_outage_ms, 3540);  // rank 1's, the longest
  EXPECT_TRUE(r.sa_restored);
  EXPECT_EQ(r.lid_changes, 0);
  const json doc = toJson(r);
  EXPECT_EQ(doc["sa_outage_ms"], 3540);
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
}

TEST(SubnetRecovery, TheTakeoverGateJudgesEveryStepsNewMasterAndOpenOutages) {
  RunAnalysis analysis;
  StepMetrics quick;
  quick.step = 0;
  quick.subnet = SubnetRecovery{3072.9, "0x05", 3021, true, 0};
  StepMetrics no_change;  // a link fault: mastership never moved
  no_change.step = 1;
  no_change.subnet = SubnetRecovery{};
  analysis.steps = {quick, no_change};
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

}  // namespace
}  // namespace fabric_chaos::scenarios
