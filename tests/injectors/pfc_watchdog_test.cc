// pfc_watchdog against a fake lab switch: the schema, capture of the port's watchdog, apply and
// revert as changes of that one setting, and the refusal of a port no PFC agent runs.

#include "injectors/pfc/pfc_watchdog.h"

#include <gtest/gtest.h>

#include "tests/fakes/fake_pfc_switches.h"

namespace fabric_chaos::injectors {
namespace {

using core::StatusCode;

Fault watchdogOn(const std::string& netns, const std::string& ifname, json params) {
  return Fault{"pfc_watchdog", InterfaceTarget{netns, ifname}, std::move(params)};
}

class PfcWatchdogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    switches_.ports["fcl-sw0/p1"] = {0xff, std::nullopt};
    switches_.ports["fcl-sw0/p2"] = {0xff,
                                     PfcWatchdogConfig{PfcWatchdogAction::kForward, 400, 2000}};
  }
  fakes::FakePfcSwitches switches_;
  PfcWatchdog watchdog_{&switches_};
};

TEST_F(PfcWatchdogTest, ValidatesActionsAndSonicsRanges) {
  EXPECT_TRUE(watchdog_.validate(json::object()).isOk()) << "drop, 200 ms, 200 ms";
  EXPECT_TRUE(watchdog_.validate({{"action", "off"}}).isOk());
  EXPECT_EQ(watchdog_.validate({{"action", "shed"}}).message(),
            "action: must be one of drop, forward, alert, off");
  EXPECT_EQ(watchdog_.validate({{"detection_ms", 50}}).message(),
            "detection_ms: must be an integer in 100..5000");
  EXPECT_EQ(watchdog_.validate({{"restoration_ms", 60001}}).message(),
            "restoration_ms: must be an integer in 100..60000");
}

TEST_F(PfcWatchdogTest, AppliesThePortsWatchdogAndRevertsToWhatItWas) {
  const Fault fault = watchdogOn("fcl-sw0", "p1", {{"action", "drop"}, {"detection_ms", 300}});
  auto prior = watchdog_.capture(fault);
  ASSERT_TRUE(prior.isOk()) << prior.status().message();
  EXPECT_EQ(*prior, (json{{"watchdog", nullptr}}));
  ASSERT_TRUE(watchdog_.apply(fault).isOk());
  EXPECT_EQ(switches_.ports["fcl-sw0/p1"].watchdog,
            (PfcWatchdogConfig{PfcWatchdogAction::kDrop, 300, 200}));
  EXPECT_EQ(watchdog_.observe(fault).value(), (json{{"watchdog", "drop:300:200"}}));
  ASSERT_TRUE(watchdog_.revert(fault, *prior).isOk());
  EXPECT_EQ(switches_.ports["fcl-sw0/p1"].watchdog, std::nullopt);
  EXPECT_EQ(switches_.changes, (std::vector<std::string>{"fcl-sw0/p1 watchdog=drop:300:200",
                                                         "fcl-sw0/p1 watchdog=off"}));
  EXPECT_EQ(switches_.ports["fcl-sw0/p1"].pfc_enabled, 0xff) << "the enable mask is not touched";
}

TEST_F(PfcWatchdogTest, OffTakesTheLabsWatchdogAwayForTheStep) {
  const Fault fault = watchdogOn("fcl-sw0", "p2", {{"action", "off"}});
  auto prior = watchdog_.capture(fault);
  ASSERT_TRUE(prior.isOk());
  EXPECT_EQ(*prior, (json{{"watchdog", "forward:400:2000"}}));
  ASSERT_TRUE(watchdog_.apply(fault).isOk());
  EXPECT_EQ(switches_.ports["fcl-sw0/p2"].watchdog, std::nullopt);
  ASSERT_TRUE(watchdog_.revert(fault, *prior).isOk());
  EXPECT_EQ(switches_.ports["fcl-sw0/p2"].watchdog,
            (PfcWatchdogConfig{PfcWatchdogAction::kForward, 400, 2000}));
}

TEST_F(PfcWatchdogTest, APortWithoutAPfcAgentIsNotSupportedAndNothingChanges) {
  const Fault fault = watchdogOn("fcl-h1", "eth0", json::object());
  auto prior = watchdog_.capture(fault);
  EXPECT_EQ(prior.status().code(), StatusCode::kNotSupported);
  EXPECT_NE(prior.status().message().find("lab up --pfc"), std::string::npos)
      << prior.status().message();
  EXPECT_FALSE(watchdog_.apply(fault).isOk());
  EXPECT_TRUE(watchdog_.revert(fault, json::object()).isOk()) << "nothing captured, nothing to do";
  EXPECT_TRUE(switches_.changes.empty());
}

TEST_F(PfcWatchdogTest, AFailedChangeReachesTheCaller) {
  switches_.fail_with = core::Status(StatusCode::kTimeout, "the PFC agent did not answer");
  const core::Status applied = watchdog_.apply(watchdogOn("fcl-sw0", "p1", json::object()));
  EXPECT_EQ(applied.code(), StatusCode::kTimeout);
  EXPECT_NE(applied.message().find("pfc_watchdog on"), std::string::npos) << applied.message();
}

TEST_F(PfcWatchdogTest, NeedsAnInterfaceTarget) {
  EXPECT_EQ(PfcWatchdog(nullptr).info().available, false);
  EXPECT_EQ(
      PfcWatchdog(nullptr).capture(watchdogOn("fcl-sw0", "p1", json::object())).status().code(),
      StatusCode::kNotSupported);
}

}  // namespace
}  // namespace fabric_chaos::injectors
