// `fabric-chaos pfc-emit`'s command line and the frame period it implies: table-driven over
// injectors/pfc/pfc_emitter_options.h (pure).
#include "injectors/pfc/pfc_emitter_options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace fabric_chaos::injectors {
namespace {

using core::StatusCode;

core::Result<PfcEmitterOptions> parse(std::vector<std::string> args) {
  args.insert(args.begin(), "pfc-emit");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return parsePfcEmitterArgs(static_cast<int>(argv.size()), argv.data());
}

TEST(PfcEmitterArgs, Defaults) {
  auto o = parse({"--ifname", "va", "--priorities", "3", "--interval-us", "1000"});
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  EXPECT_EQ(o->ifname, "va");
  EXPECT_EQ(o->class_enable, 0x08);
  EXPECT_EQ(o->quanta, 65535);
  EXPECT_EQ(o->interval_us, 1000);
  EXPECT_FALSE(o->continuous);
  EXPECT_FALSE(o->link_mbps.has_value());
  EXPECT_EQ(o->on_ms, 0);
  EXPECT_EQ(o->off_ms, 0);
  EXPECT_FALSE(o->xon_on_stop);
  EXPECT_EQ(o->stats_ms, 200);
}

TEST(PfcEmitterArgs, EveryFlag) {
  auto o = parse({"--ifname=eth1", "--priorities", "3,4", "--quanta", "0", "--interval-us=250",
                  "--on-ms", "50", "--off-ms", "0", "--xon-on-stop", "--stats-ms", "100",
                  "--link-mbps", "25000"});
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  EXPECT_EQ(o->ifname, "eth1");
  EXPECT_EQ(o->class_enable, 0x18);
  EXPECT_EQ(o->quanta, 0);
  EXPECT_EQ(o->interval_us, 250);
  EXPECT_EQ(o->on_ms, 50);
  EXPECT_EQ(o->off_ms, 0);
  EXPECT_TRUE(o->xon_on_stop);
  EXPECT_EQ(o->stats_ms, 100);
  EXPECT_EQ(o->link_mbps, 25000);

  auto c = parse({"--ifname", "va", "--priorities", "0,7", "--continuous", "--quanta", "1"});
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_TRUE(c->continuous);
  EXPECT_FALSE(c->interval_us.has_value());
  EXPECT_EQ(c->class_enable, 0x81);
}

TEST(PfcEmitterArgs, UsageErrorsNameTheFlag) {
  struct Case {
    std::vector<std::string> args;
    const char* names;  // a word the message must contain
  };
  const std::vector<Case> cases = {
      {{"--priorities", "3", "--interval-us", "1000"}, "--ifname"},
      {{"--ifname", "va", "--interval-us", "1000"}, "--priorities"},
      {{"--ifname", "va", "--priorities", "3"}, "--interval-us"},
      {{"--ifname", "va", "--priorities", "3", "--interval-us", "10", "--continuous"},
       "exactly one"},
      {{"--ifname", "va", "--priorities", "8", "--interval-us", "10"}, "--priorities"},
      {{"--ifname", "va", "--priorities", "", "--interval-us", "10"}, "--priorities"},
      {{"--ifname", "va", "--priorities", "3", "--quanta", "65536", "--interval-us", "10"},
       "--quanta"},
      {{"--ifname", "va", "--priorities", "3", "--quanta", "-1", "--interval-us", "10"},
       "--quanta"},
      {{"--ifname", "va", "--priorities", "3", "--interval-us", "0"}, "--interval-us"},
      {{"--ifname", "va", "--priorities", "3", "--interval-us", "1ms"}, "--interval-us"},
      {{"--ifname", "va", "--priorities", "3", "--continuous", "--quanta", "0"}, "--quanta"},
      {{"--ifname", "va", "--priorities", "3", "--interval-us", "10", "--on-ms", "5"}, "--off-ms"},
      {{"--ifname", "va", "--priorities", "3", "--interval-us", "10", "--off-ms", "5"}, "--on-ms"},
      {{"--ifname", "va", "--priorities", "3", "--interval-us", "10", "--on-ms", "0", "--off-ms",
        "5"},
       "--on-ms"},
      {{"--ifname", "va", "--priorities", "3", "--interval-us", "10", "--stats-ms", "1"},
       "--stats-ms"},
      {{"--ifname", "va", "--priorities", "3", "--interval-us"}, "needs a value"},
      {{"--ifname", "va", "--priorities", "3", "--interval-us", "10", "--bogus", "1"}, "--bogus"},
      {{"--ifname", "va", "--priorities", "3", "--interval-us", "10", "extra"}, "extra"},
      {{"--ifname", "va", "--priorities", "3", "--continuous=yes"}, "--continuous"},
      {{"--ifname", "a-name-of-16-chars", "--priorities", "3", "--interval-us", "10"}, "--ifname"},
  };
  for (const Case& c : cases) {
    auto o = parse(c.args);
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    ASSERT_FALSE(o.isOk()) << joined;
    EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument) << joined;
    EXPECT_NE(o.status().message().find(c.names), std::string::npos)
        << joined << "-> " << o.status().message();
  }
}

TEST(PfcEmitterArgs, UsageListsEveryFlag) {
  const std::string usage = pfcEmitterUsage();
  for (const char* flag :
       {"--ifname", "--priorities", "--quanta", "--interval-us", "--continuous", "--link-mbps",
        "--on-ms", "--off-ms", "--xon-on-stop", "--realtime", "--stats-ms"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag;
  }
}

TEST(PfcEmitPeriod, FixedInterval) {
  PfcEmitterOptions o;
  o.ifname = "va";
  o.interval_us = 1000;
  auto p = pfcEmitPeriod(o, 10000);
  ASSERT_TRUE(p.isOk());
  EXPECT_EQ(p->period_ns, 1'000'000);
}

TEST(PfcEmitPeriod, ContinuousIsHalfThePauseAtTheLinkSpeed) {
  struct Case {
    uint16_t quanta;
    std::optional<int64_t> flag_mbps;
    std::optional<int64_t> reported_mbps;
    int64_t period_ns;  // -1: a usage error
  };
  const std::vector<Case> cases = {
      {65535, std::nullopt, 10000, 1'677'696},  // 3.355 ms pause at 10 Gbit/s
      {65535, std::nullopt, 100000, 167'769},   // 335.5 us at 100 Gbit/s
      {65535, std::nullopt, 400000, 41'942},    // 83.9 us at 400 Gbit/s
      {65535, 25000, 10000, 671'078},           // --link-mbps wins over ethtool
      {65535, 25000, std::nullopt, 671'078},    // and stands in when ethtool has nothing
      {1000, std::nullopt, 1000, 256'000},      // 512 us at 1 Gbit/s
      {1, std::nullopt, 400000, 1000},          // 0.64 ns raised to the 1 us minimum
      {65535, std::nullopt, std::nullopt, -1},  // no speed at all
      {65535, std::nullopt, 0, -1},             // a reported 0 is no speed
  };
  for (const Case& c : cases) {
    PfcEmitterOptions o;
    o.ifname = "va";
    o.continuous = true;
    o.quanta = c.quanta;
    o.link_mbps = c.flag_mbps;
    auto p = pfcEmitPeriod(o, c.reported_mbps);
    if (c.period_ns < 0) {
      ASSERT_FALSE(p.isOk()) << c.quanta;
      EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(p.status().message().find("--link-mbps"), std::string::npos);
      EXPECT_NE(p.status().message().find("va"), std::string::npos);
      continue;
    }
    ASSERT_TRUE(p.isOk()) << p.status().toString();
    EXPECT_EQ(p->period_ns, c.period_ns) << c.quanta << " " << p->reason;
    EXPECT_FALSE(p->reason.empty());
  }
}

TEST(PfcEmitPeriod, TheReasonSaysWhereTheSpeedCameFrom) {
  PfcEmitterOptions o;
  o.ifname = "va";
  o.continuous = true;
  auto reported = pfcEmitPeriod(o, 10000);
  ASSERT_TRUE(reported.isOk());
  EXPECT_NE(reported->reason.find("3355.4 us"), std::string::npos) << reported->reason;
  EXPECT_NE(reported->reason.find("ethtool"), std::string::npos) << reported->reason;
  o.link_mbps = 10000;
  auto flagged = pfcEmitPeriod(o, std::nullopt);
  ASSERT_TRUE(flagged.isOk());
  EXPECT_NE(flagged->reason.find("--link-mbps"), std::string::npos) << flagged->reason;
  o.quanta = 1;
  o.link_mbps = 400000;
  auto tiny = pfcEmitPeriod(o, std::nullopt);
  ASSERT_TRUE(tiny.isOk());
  EXPECT_NE(tiny->reason.find("0.00128 us"), std::string::npos) << tiny->reason;
  EXPECT_NE(tiny->reason.find("1 us minimum"), std::string::npos) << tiny->reason;
}

TEST(PfcEmitterArgs, RealtimeOnlyForPeriodsThatLeaveTheCoreIdle) {
  auto options = parse({"--ifname", "eth0", "--priorities", "3", "--continuous", "--realtime"});
  ASSERT_TRUE(options.isOk()) << options.status().toString();
  EXPECT_TRUE(options->realtime);
  EXPECT_TRUE(pfcEmitRealtime(*options, 1'677'696));  // 65535 quanta at 10 Gbit/s, halved
  EXPECT_TRUE(pfcEmitRealtime(*options, kMinRealtimePfcEmitPeriodNs));
  EXPECT_FALSE(pfcEmitRealtime(*options, kMinRealtimePfcEmitPeriodNs - 1));
  options->realtime = false;
  EXPECT_FALSE(pfcEmitRealtime(*options, 1'677'696));
}

}  // namespace
}  // namespace fabric_chaos::injectors
