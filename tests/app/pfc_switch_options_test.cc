// `fabric-chaos pfc-switch`'s command line: the pause-propagation thresholds and their defaults,
// and what it refuses, naming the flag.

#include "app/pfc_switch_options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace fabric_chaos::app {
namespace {

core::Result<PfcSwitchOptions> parse(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return parsePfcSwitchOptions(static_cast<int>(argv.size()), argv.data());
}

const std::vector<std::string> kBase = {"--ports", "p0, p1,up0", "--rate-bps", "20000000",
                                        "--buffer-bytes", "131072"};

std::vector<std::string> with(std::vector<std::string> extra) {
  std::vector<std::string> args = kBase;
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(PfcSwitchOptions, XoffIsHalfTheBufferAndXonAQuarterByDefault) {
  auto o = parse(kBase);
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  EXPECT_EQ(o->ports, (std::vector<std::string>{"p0", "p1", "up0"}));
  EXPECT_EQ(o->xoff_bytes, 65536);
  EXPECT_EQ(o->xon_bytes, 32768);
}

TEST(PfcSwitchOptions, ThresholdsAsGivenAndZeroTurnsPropagationOff) {
  auto o = parse(with({"--xoff", "100000", "--xon", "5000"}));
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  EXPECT_EQ(o->xoff_bytes, 100000);
  EXPECT_EQ(o->xon_bytes, 5000);
  o = parse(with({"--xoff", "0"}));
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  EXPECT_EQ(o->xoff_bytes, 0);
  EXPECT_EQ(o->xon_bytes, 0);
}

TEST(PfcSwitchOptions, ThresholdsOutsideTheBufferAreRefusedNamingTheFlag) {
  auto o = parse(with({"--xoff", "200000"}));
  ASSERT_FALSE(o.isOk());
  EXPECT_NE(o.status().message().find("--xoff"), std::string::npos) << o.status().message();
  o = parse(with({"--xoff", "1000", "--xon", "2000"}));
  ASSERT_FALSE(o.isOk());
  EXPECT_NE(o.status().message().find("--xon"), std::string::npos) << o.status().message();
  o = parse(with({"--xoff", "lots"}));
  ASSERT_FALSE(o.isOk());
  EXPECT_NE(o.status().message().find("--xoff"), std::string::npos) << o.status().message();
}

}  // namespace
}  // namespace fabric_chaos::app
