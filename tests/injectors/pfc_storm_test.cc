// pfc_storm against fakes: the schema and the rules between parameters, the emitter's command
// line for each mode, and apply/revert/observe as emitter start/stop/state on the target's key.

#include "injectors/pfc/pfc_storm.h"

#include <gtest/gtest.h>

#include <map>

#include "tests/fakes/fake_emitters.h"
#include "tests/fakes/fake_links.h"

namespace fabric_chaos::injectors {
namespace {

using core::Status;
using core::StatusCode;

Fault stormOn(const std::string& netns, const std::string& ifname, json params) {
  return Fault{"pfc_storm", InterfaceTarget{netns, ifname}, std::move(params)};
}

class PfcStormTest : public ::testing::Test {
 protected:
  void SetUp() override { links_.addLink("fcl-h1", {"eth0", 0, true, true, "", ""}); }
  fakes::FakeLinks links_;
  fakes::FakeEmitters emitters_;
  PfcStorm storm_{&links_, &emitters_, "/usr/bin/fabric-chaos"};
};

TEST_F(PfcStormTest, ValidatesTheSchemaAndTheRulesBetweenParameters) {
  EXPECT_TRUE(storm_.validate({{"priorities", {3}}}).isOk());
  EXPECT_TRUE(
      storm_.validate({{"priorities", {3, 4}}, {"mode", "rate"}, {"rate_fps", 1000}}).isOk());
  auto message = [&](const json& params) { return storm_.validate(params).message(); };
  EXPECT_EQ(message(json::object()), "priorities: required");
  EXPECT_EQ(message({{"priorities", {3, 8}}}),
            "priorities: must be a non-empty list of distinct integers in 0..7");
  EXPECT_EQ(message({{"priorities", {3, 3}}}),
            "priorities: must be a non-empty list of distinct integers in 0..7");
  EXPECT_EQ(message({{"priorities", json::array()}}),
            "priorities: must be a non-empty list of distinct integers in 0..7");
  EXPECT_EQ(message({{"priorities", {3}}, {"mode", "rate"}}),
            "rate_fps: required with mode \"rate\"");
  EXPECT_EQ(message({{"priorities", {3}}, {"rate_fps", 10}}),
            "rate_fps: only with mode \"rate\" (continuous mode paces by the link speed)");
  EXPECT_EQ(message({{"priorities", {3}}, {"quanta", 0}}),
            "quanta: must be at least 1 in continuous mode (0 pauses nothing)");
  EXPECT_TRUE(
      storm_.validate({{"priorities", {3}}, {"quanta", 0}, {"mode", "rate"}, {"rate_fps", 5}})
          .isOk())
      << "an XON storm at a rate is allowed";
  EXPECT_EQ(message({{"priorities", {3}}, {"on_ms", 100}}),
            "off_ms: on_ms and off_ms come together");
  EXPECT_EQ(message({{"priorities", {3}}, {"quanta", 70000}}),
            "quanta: must be an integer in 0..65535");
}

TEST_F(PfcStormTest, TheEmittersCommandLineFollowsTheMode) {
  const InterfaceTarget port{"fcl-sw0", "p1"};
  EXPECT_EQ(PfcStorm::emitterArgv("/bin/fc", port, {{"priorities", {3, 4}}}),
            (std::vector<std::string>{"/bin/fc", "pfc-emit", "--ifname", "p1", "--priorities",
                                      "3,4", "--quanta", "65535", "--continuous", "--realtime",
                                      "--xon-on-stop"}));
  EXPECT_EQ(PfcStorm::emitterArgv("/bin/fc", port,
                                  {{"priorities", {3}},
                                   {"quanta", 100},
                                   {"mode", "rate"},
                                   {"rate_fps", 3000},
                                   {"on_ms", 200},
                                   {"off_ms", 800},
                                   {"xon_on_stop", false}}),
            (std::vector<std::string>{"/bin/fc", "pfc-emit", "--ifname", "p1", "--priorities", "3",
                                      "--quanta", "100", "--interval-us", "333", "--on-ms", "200",
                                      "--off-ms", "800"}));
  EXPECT_EQ(PfcStorm::emitterArgv("/bin/fc", port, {{"priorities", {0}}, {"link_mbps", 25000}}),
            (std::vector<std::string>{"/bin/fc", "pfc-emit", "--ifname", "p1", "--priorities", "0",
                                      "--quanta", "65535", "--continuous", "--realtime",
                                      "--link-mbps", "25000", "--xon-on-stop"}));
  EXPECT_EQ(PfcStorm::emitterKey(port), "pfc_storm fcl-sw0/p1");
}

TEST_F(PfcStormTest, ApplyStartsRevertStopsObserveReportsOnTheTargetsKey) {
  const Fault fault = stormOn("fcl-h1", "eth0", {{"priorities", {3}}});
  auto prior = storm_.capture(fault);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  EXPECT_EQ(*prior, json::object());
  EXPECT_EQ(storm_.capture(stormOn("fcl-h1", "eth9", {{"priorities", {3}}})).status().code(),
            StatusCode::kNotFound);

  ASSERT_TRUE(storm_.apply(fault).isOk());
  ASSERT_EQ(emitters_.started.size(), 1u);
  EXPECT_EQ(emitters_.started[0].key, "pfc_storm fcl-h1/eth0");
  EXPECT_EQ(emitters_.started[0].netns, "fcl-h1") << "the emitter runs inside the namespace";
  EXPECT_EQ(emitters_.started[0].argv[0], "/usr/bin/fabric-chaos");

  auto seen = storm_.observe(fault);
  ASSERT_TRUE(seen.isOk());
  EXPECT_EQ((*seen)["running"], true);
  EXPECT_EQ((*seen)["report"]["frames"], 7);

  ASSERT_TRUE(storm_.revert(fault, *prior).isOk());
  EXPECT_EQ(emitters_.stopped, (std::vector<std::string>{"pfc_storm fcl-h1/eth0 1000"}));
  EXPECT_EQ(storm_.observe(fault).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(storm_.revert(fault, *prior).isOk()) << "reverting twice is fine";

  emitters_.start_result =
      Status(StatusCode::kUnavailable, "emitter did not start: no such device");
  auto failed = storm_.apply(fault);
  EXPECT_EQ(failed.code(), StatusCode::kUnavailable);
  EXPECT_NE(failed.message().find("no such device"), std::string::npos) << failed.message();
}

TEST_F(PfcStormTest, WithoutEmittersTheKindSaysWhy) {
  PfcStorm bare(&links_, nullptr, "");
  EXPECT_FALSE(bare.info().available);
  EXPECT_EQ(bare.info().reason, "no emitter support in this agent");
  EXPECT_TRUE(storm_.info().available);
  EXPECT_EQ(storm_.info().backend, "af_packet");
  EXPECT_EQ(storm_.spec().lifecycle, Lifecycle::kLongRunning);
}

}  // namespace
}  // namespace fabric_chaos::injectors
