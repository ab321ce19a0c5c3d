// The lab's switch port model (lab/port_model.h): rates, sizes and DSCP lists read as tc writes
// them, the limits, the tc commands that build a port (htb line, two ETS-like classes with
// drop-tail bfifos, u32 DSCP filters) and the fabric description that records it.

#include "lab/port_model.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "lab/netns_lab.h"

namespace fabric_chaos::lab {
namespace {

using core::StatusCode;
using Command = std::vector<std::string>;

TEST(PortModelTest, RatesAndSizesReadAsTcWritesThem) {
  EXPECT_EQ(*parseLinkRate("1gbit"), 1'000'000'000);
  EXPECT_EQ(*parseLinkRate("100Mbit"), 100'000'000);
  EXPECT_EQ(*parseLinkRate("500kbit"), 500'000);
  EXPECT_EQ(*parseLinkRate("25gbit"), 25'000'000'000);
  EXPECT_EQ(*parseLinkRate("2000000"), 2'000'000);
  for (const char* bad : {"", "fast", "1gbps", "1.5gbit", "-1mbit", "99999999999999999999gbit"}) {
    auto rate = parseLinkRate(bad);
    EXPECT_EQ(rate.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(rate.status().message().find("--link-rate"), std::string::npos) << bad;
  }
  EXPECT_EQ(*parseBufferSize("64k"), 65536);
  EXPECT_EQ(*parseBufferSize("512KB"), 524288);
  EXPECT_EQ(*parseBufferSize("2m"), 2 << 20);
  EXPECT_EQ(*parseBufferSize("3000"), 3000);
  for (const char* bad : {"", "big", "1g", "1.5m", "k"}) {
    auto size = parseBufferSize(bad);
    EXPECT_EQ(size.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(size.status().message().find("--buffer"), std::string::npos) << bad;
  }
  EXPECT_EQ(*parseDscpList("26"), (std::vector<int>{26}));
  EXPECT_EQ(*parseDscpList("26,24,0,63"), (std::vector<int>{26, 24, 0, 63}));
  for (const char* bad : {"", "64", "-1", "26,", ",26", "26,,24", "af31", "26 24"}) {
    EXPECT_EQ(parseDscpList(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(parseDscpList("26,26").status().message(), "--lossless-dscp lists 26 twice");
}

TEST(PortModelTest, LimitsNameTheFlag) {
  const scenarios::EgressModel good{100'000'000, 65536, {26}};
  EXPECT_TRUE(checkEgressModel(good).isOk());
  scenarios::EgressModel slow = good;
  slow.rate_bps = 999'999;
  EXPECT_EQ(checkEgressModel(slow).message(),
            "--link-rate must be between 1mbit and 100gbit, got 999999 bit/s");
  scenarios::EgressModel tiny = good;
  tiny.buffer_bytes = 3027;
  EXPECT_EQ(checkEgressModel(tiny).message().rfind("--buffer must be between 3028 bytes", 0), 0u);
  scenarios::EgressModel huge = good;
  huge.buffer_bytes = (int64_t{64} << 20) + 1;
  EXPECT_EQ(checkEgressModel(huge).code(), StatusCode::kInvalidArgument);
  scenarios::EgressModel repeated = good;
  repeated.lossless_dscp = {26, 26};
  EXPECT_EQ(checkEgressModel(repeated).code(), StatusCode::kInvalidArgument);
}

TEST(PortModelTest, CommandsBuildTheLineTwoClassesTheirBuffersAndTheDscpFilters) {
  const auto commands = egressCommands("fcl-sw0", "p3", {1'000'000'000, 262144, {26, 46}});
  const std::vector<Command> want = {
      {"-n", "fcl-sw0", "qdisc", "replace", "dev", "p3", "root", "handle", "1:", "htb", "default",
       "20"},
      {"-n", "fcl-sw0", "class", "add", "dev", "p3", "parent", "1:", "classid", "1:1", "htb",
       "rate", "1000000000bit", "ceil", "1000000000bit", "burst", "250000", "cburst", "250000"},
      {"-n",    "fcl-sw0", "class",        "add",     "dev",
       "p3",    "parent",  "1:1",          "classid", "1:10",
       "htb",   "rate",    "500000000bit", "ceil",    "1000000000bit",
       "burst", "250000",  "cburst",       "250000",  "prio",
       "0"},
      {"-n",    "fcl-sw0", "class",        "add",     "dev",
       "p3",    "parent",  "1:1",          "classid", "1:20",
       "htb",   "rate",    "500000000bit", "ceil",    "1000000000bit",
       "burst", "250000",  "cburst",       "250000",  "prio",
       "1"},
      {"-n", "fcl-sw0", "qdisc", "add", "dev", "p3", "parent", "1:10", "handle", "10:", "bfifo",
       "limit", "262144"},
      {"-n", "fcl-sw0", "qdisc", "add", "dev", "p3", "parent", "1:20", "handle", "20:", "bfifo",
       "limit", "262144"},
      // DSCP 26 = TOS 0x68, DSCP 46 (EF) = TOS 0xb8, both under the DS-field mask 0xfc.
      {"-n", "fcl-sw0",  "filter", "add",  "dev",    "p3",  "parent",
       "1:", "protocol", "ip",     "prio", "1",      "u32", "match",
       "ip", "dsfield",  "0x68",   "0xfc", "flowid", "1:10"},
      {"-n", "fcl-sw0",  "filter", "add",  "dev",    "p3",  "parent",
       "1:", "protocol", "ip",     "prio", "1",      "u32", "match",
       "ip", "dsfield",  "0xb8",   "0xfc", "flowid", "1:10"},
  };
  EXPECT_EQ(commands, want);
  EXPECT_EQ(describeEgress({1'000'000'000, 262144, {26, 46}}),
            "1 Gbit/s, 256 KiB per class, lossless DSCP 26,46");
  EXPECT_EQ(describeEgress({2'500'000, 3100, {}}),
            "2500 kbit/s, 3100 bytes per class, lossless DSCP none");
}

TEST(PortModelTest, TheFabricDescriptionRecordsItOnEverySwitchAndRoundTrips) {
  LabOptions options;
  options.topology = LabTopology::kLeafSpine;
  options.egress = scenarios::EgressModel{200'000'000, 131072, {26}};
  const scenarios::Fabric fabric = describeLab(options);
  ASSERT_EQ(fabric.switches.size(), 4u);
  for (const auto& sw : fabric.switches) {
    ASSERT_TRUE(sw.egress.has_value()) << sw.name;
    EXPECT_EQ(*sw.egress, *options.egress) << sw.name;
  }
  const auto json = scenarios::toJson(fabric);
  EXPECT_EQ(json["switches"][0]["egress"],
            (nlohmann::json{
                {"rate_bps", 200'000'000}, {"buffer_bytes", 131072}, {"lossless_dscp", {26}}}));
  auto parsed = scenarios::fabricFromJson(json);
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(scenarios::toJson(*parsed), json);

  // Without a model, no "egress" key: a star lab's document is what it was.
  EXPECT_FALSE(scenarios::toJson(describeLab(LabOptions{}))["switches"][0].contains("egress"));

  for (const auto& [mutate, message] :
       std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>>{
           {[](nlohmann::json& e) { e.erase("rate_bps"); },
            "switches[0].egress.rate_bps: required"},
           {[](nlohmann::json& e) { e["buffer_bytes"] = 0; },
            "switches[0].egress.buffer_bytes: must be a positive integer"},
           {[](nlohmann::json& e) { e["lossless_dscp"] = {64}; },
            "switches[0].egress.lossless_dscp[0]: must be a DSCP value (0-63)"},
           {[](nlohmann::json& e) { e["red"] = true; }, "switches[0].egress.red: unknown field"},
       }) {
    nlohmann::json doc = json;
    mutate(doc["switches"][0]["egress"]);
    auto bad = scenarios::fabricFromJson(doc);
    ASSERT_FALSE(bad.isOk()) << message;
    EXPECT_EQ(bad.status().message().rfind(message, 0), 0u) << bad.status().message();
  }
}

}  // namespace
}  // namespace fabric_chaos::lab
