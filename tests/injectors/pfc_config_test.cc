// pfc_config against fakes: the rules between enable and disable, the backend chosen per target
// (a lab switch port whose PFC agent runs, else the NIC's DCB), apply as a relative change of the
// enable mask, an exact revert from the prior, and the errors a veth and a silent driver give.

#include "injectors/pfc/pfc_config.h"

#include <gtest/gtest.h>

#include "tests/fakes/fake_dcb.h"
#include "tests/fakes/fake_pfc_switches.h"

namespace fabric_chaos::injectors {
namespace {

using core::StatusCode;

Fault configOn(const std::string& netns, const std::string& ifname, json params) {
  return Fault{"pfc_config", InterfaceTarget{netns, ifname}, std::move(params)};
}

class PfcConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    switches_.ports["fcl-sw0/p1"] = {0xff, std::nullopt};
    sys::IeeePfc nic;
    nic.pfc_cap = 8;
    nic.pfc_en = 0x08;  // the RoCE class only
    nic.mbc = 1;
    nic.delay = 0x1234;
    nic.requests[3] = 77;  // counters are the driver's, never written
    dcb_.addDevice("", "ens1f0", nic);
    dcb_.addUnsupportedDevice("fcl-h1", "eth0");
  }
  fakes::FakeDcb dcb_;
  fakes::FakePfcSwitches switches_;
  PfcConfig config_{&dcb_, &switches_};
};

TEST_F(PfcConfigTest, ValidatesPriorities) {
  EXPECT_TRUE(config_.validate({{"disable", {3}}}).isOk());
  EXPECT_TRUE(config_.validate({{"disable", {3}}, {"enable", {4}}}).isOk());
  EXPECT_EQ(config_.validate(json::object()).message(),
            "disable: name the priorities to change (disable, enable or both)");
  EXPECT_EQ(config_.validate({{"disable", {3}}, {"enable", {3, 4}}}).message(),
            "enable: priority 3 is also in disable");
  EXPECT_EQ(config_.validate({{"disable", {8}}}).message(),
            "disable: must be a non-empty list of distinct integers in 0..7");
  EXPECT_EQ(config_.validate({{"priorities", {3}}}).message().rfind("priorities: unknown", 0), 0u);
}

TEST_F(PfcConfigTest, OnALabSwitchPortItChangesTheAgentsMaskAndRestoresIt) {
  const Fault fault = configOn("fcl-sw0", "p1", {{"disable", {3}}});
  auto prior = config_.capture(fault);
  ASSERT_TRUE(prior.isOk()) << prior.status().message();
  EXPECT_EQ(*prior, (json{{"backend", "lab_switch"}, {"pfc_enabled", 0xff}}));
  ASSERT_TRUE(config_.apply(fault).isOk());
  EXPECT_EQ(switches_.ports["fcl-sw0/p1"].pfc_enabled, 0xf7);
  ASSERT_TRUE(config_.apply(fault).isOk()) << "applying twice leaves one fault";
  EXPECT_EQ(switches_.ports["fcl-sw0/p1"].pfc_enabled, 0xf7);
  ASSERT_TRUE(config_.revert(fault, *prior).isOk());
  EXPECT_EQ(switches_.ports["fcl-sw0/p1"].pfc_enabled, 0xff);
  EXPECT_TRUE(dcb_.calls().empty()) << "a lab switch port never goes to DCB";
  EXPECT_EQ(switches_.changes,
            (std::vector<std::string>{"fcl-sw0/p1 pfc_enabled=0xf7", "fcl-sw0/p1 pfc_enabled=0xf7",
                                      "fcl-sw0/p1 pfc_enabled=0xff"}));
}

TEST_F(PfcConfigTest, OnANicItMovesTheLosslessClassAndRestoresTheWholeSetting) {
  // Enabled on the wrong priority: off on 3, on on 4.
  const Fault fault = configOn("", "ens1f0", {{"disable", {3}}, {"enable", {4}}});
  auto prior = config_.capture(fault);
  ASSERT_TRUE(prior.isOk()) << prior.status().message();
  EXPECT_EQ(
      *prior,
      (json{{"backend", "dcb"}, {"pfc_cap", 8}, {"pfc_en", 0x08}, {"mbc", 1}, {"delay", 0x1234}}));
  ASSERT_TRUE(config_.apply(fault).isOk());
  sys::IeeePfc now = *dcb_.pfc("", "ens1f0");
  EXPECT_EQ(now.pfc_en, 0x10);
  EXPECT_EQ(now.pfc_cap, 8);
  EXPECT_EQ(now.mbc, 1);
  EXPECT_EQ(now.delay, 0x1234);
  EXPECT_EQ(config_.observe(fault).value()["pfc_en"], 0x10);
  ASSERT_TRUE(config_.revert(fault, *prior).isOk());
  now = *dcb_.pfc("", "ens1f0");
  EXPECT_EQ(now.pfc_en, 0x08);
  EXPECT_EQ(now.requests[3], 77u);
  EXPECT_TRUE(switches_.changes.empty());
}

TEST_F(PfcConfigTest, AVethHasNoDcbAndTheErrorSaysWhereToActInstead) {
  const Fault fault = configOn("fcl-h1", "eth0", {{"disable", {3}}});
  auto prior = config_.capture(fault);
  ASSERT_EQ(prior.status().code(), StatusCode::kNotSupported);
  EXPECT_NE(prior.status().message().find("EOPNOTSUPP"), std::string::npos)
      << prior.status().message();
  EXPECT_NE(prior.status().message().find("switch side of a link"), std::string::npos);
  EXPECT_EQ(config_.apply(fault).code(), StatusCode::kNotSupported);
  EXPECT_EQ(dcb_.mutatingCalls(), 0) << "nothing was written";
  EXPECT_TRUE(config_.revert(fault, json::object()).isOk()) << "nothing captured, nothing to do";
}

TEST_F(PfcConfigTest, ADriverThatIgnoresTheSettingIsCaughtByReadingItBack) {
  dcb_.ignoreSets(true);
  const core::Status applied = config_.apply(configOn("", "ens1f0", {{"disable", {3}}}));
  EXPECT_EQ(applied.code(), StatusCode::kNotSupported);
  EXPECT_NE(applied.message().find("does not set IEEE PFC"), std::string::npos)
      << applied.message();
}

TEST_F(PfcConfigTest, AFailedWriteReachesTheCallerAndAMissingInterfaceIsNotFound) {
  dcb_.failOnCall(1, core::Status(StatusCode::kPermissionDenied, "cannot set PFC"));
  EXPECT_EQ(config_.apply(configOn("", "ens1f0", {{"disable", {3}}})).code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(dcb_.pfc("", "ens1f0")->pfc_en, 0x08);
  EXPECT_EQ(config_.capture(configOn("", "nosuch0", {{"disable", {3}}})).status().code(),
            StatusCode::kNotFound);
  switches_.fail_with = core::Status(StatusCode::kTimeout, "the PFC agent did not answer");
  EXPECT_EQ(config_.apply(configOn("fcl-sw0", "p1", {{"disable", {3}}})).code(),
            StatusCode::kTimeout);
}

TEST(PfcConfigAvailability, NeedsOneOfItsBackends) {
  EXPECT_FALSE(PfcConfig(nullptr, nullptr).info().available);
  fakes::FakePfcSwitches switches;
  EXPECT_TRUE(PfcConfig(nullptr, &switches).info().available);
}

}  // namespace
}  // namespace fabric_chaos::injectors
