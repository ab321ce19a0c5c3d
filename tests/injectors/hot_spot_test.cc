// hot_spot against fakes: the schema; apply choosing the path (the only one, the busiest or the
// idlest by the candidate ports' transmit counters), asking each source's leaf which source ports
// it hashes onto that path's uplink and starting the generators with exactly those; a path no
// port reaches fails the apply with nothing started; unsteered hot spots; revert and observe.

#include "injectors/traffic/hot_spot.h"

#include <gtest/gtest.h>

#include "tests/fakes/fake_emitters.h"
#include "tests/fakes/fake_forwarding.h"
#include "tests/fakes/fake_links.h"

namespace fabric_chaos::injectors {
namespace {

using core::StatusCode;

// h0 on leaf l0 sends to h2 behind another leaf; the candidate paths are l0's two uplinks.
TrafficSetTarget steeredSet() {
  TrafficSetTarget set{{{"t-h0", "eth0"}}, {{"t-h2", "eth0"}}};
  set.paths.push_back({{"t-l0", "up0"}, {{"t-l0", "br0", "up0"}}});
  set.paths.push_back({{"t-l0", "up1"}, {{"t-l0", "br0", "up1"}}});
  return set;
}

class HotSpotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* ns : {"t-h0", "t-h1", "t-h2"}) {
      links_.addLink(ns, {"eth0", 0, true, true, "", ""});
    }
    links_.setIpv4("t-h0", "eth0", {"10.210.0.1"});
    links_.setIpv4("t-h1", "eth0", {"10.210.0.2"});
    links_.setIpv4("t-h2", "eth0", {"10.210.1.1"});
    setTx("up0", 1000);
    setTx("up1", 1000);
  }
  void setTx(const std::string& port, uint64_t bytes) {
    sys::LinkInfo info{port, 0, true, true, "", ""};
    info.tx_bytes = bytes;
    links_.addLink("t-l0", info);
  }
  Fault fault(TrafficSetTarget set, json params = json::object()) {
    return Fault{"hot_spot", std::move(set), std::move(params)};
  }
  std::vector<std::string> flag(size_t started, const std::string& name) {
    const auto& argv = emitters_.started.at(started).argv;
    for (size_t i = 0; i + 1 < argv.size(); ++i) {
      if (argv[i] == name) return {argv[i + 1]};
    }
    return {};
  }

  fakes::FakeLinks links_;
  fakes::FakeEmitters emitters_;
  fakes::FakeForwarding forwarding_;
  std::vector<int64_t> slept_;
  // The "sleep" is where traffic happens: up1 carries the training flow meanwhile.
  HotSpot hot_spot_{&links_, &emitters_, &forwarding_, "/usr/bin/fabric-chaos", [this](int64_t ms) {
                      slept_.push_back(ms);
                      setTx("up0", 1000 + 5'000);
                      setTx("up1", 1000 + 900'000);
                    }};
};

TEST_F(HotSpotTest, ValidatesTheSchema) {
  EXPECT_TRUE(hot_spot_.validate(json::object()).isOk());
  EXPECT_EQ(hot_spot_.validate({{"flows", 65}}).message(), "flows: must be an integer in 1..64");
  EXPECT_EQ(hot_spot_.validate({{"path", "random"}}).message(),
            "path: must be one of busiest, idlest");
  EXPECT_EQ(hot_spot_.validate({{"sample_ms", 50}}).message(),
            "sample_ms: must be an integer in 100..10000");
  EXPECT_EQ(hot_spot_.validate({{"first_source_port", 64000}}).message(),
            "first_source_port: must be an integer in 1024..61439");
}

TEST_F(HotSpotTest, PinsTheElephantsOnTheBusiestUplinkWithPortsTheLeafHashesThere) {
  const Fault f = fault(steeredSet(), {{"flows", 3}, {"sample_ms", 500}});
  ASSERT_TRUE(hot_spot_.capture(f).isOk());
  ASSERT_TRUE(hot_spot_.apply(f).isOk());
  EXPECT_EQ(slept_, (std::vector<int64_t>{500}));
  ASSERT_EQ(emitters_.started.size(), 2u);
  EXPECT_EQ(emitters_.started[0].key, "hot_spot sink t-h2/eth0");
  EXPECT_EQ(emitters_.started[0].argv,
            (std::vector<std::string>{"/usr/bin/fabric-chaos", "traffic", "sink", "--listen",
                                      "10.210.1.1:7720"}));
  EXPECT_EQ(emitters_.started[1].key, "hot_spot source t-h0/eth0 to t-h2/eth0");
  EXPECT_EQ(emitters_.started[1].netns, "t-h0");
  // up1 sent the most while sampled; the fake leaf hashes odd ports there.
  EXPECT_EQ(flag(1, "--source-ports"), (std::vector<std::string>{"20001,20003,20005"}));
  EXPECT_EQ(flag(1, "--flows"), (std::vector<std::string>{"3"}));
  EXPECT_EQ(forwarding_.asked,
            (std::vector<std::string>{"t-l0 br0 10.210.0.1->10.210.1.1:7720 x256"}));

  auto observed = hot_spot_.observe(f);
  ASSERT_TRUE(observed.isOk()) << observed.status().toString();
  const json& path = (*observed)["path"];
  EXPECT_EQ(path["port"], "t-l0/up1");
  EXPECT_EQ(path["chosen_by"], "busiest");
  EXPECT_EQ(path["candidates"][0], (json{{"port", "t-l0/up0"}, {"tx_bytes", 5000}}));
  EXPECT_EQ(path["candidates"][1], (json{{"port", "t-l0/up1"}, {"tx_bytes", 900000}}));
  EXPECT_EQ(path["sources"][0]["source_ports"], (json{20001, 20003, 20005}));
  EXPECT_EQ(path["sources"][0]["egress"], "up1");
  EXPECT_EQ((*observed)["running"], true);

  ASSERT_TRUE(hot_spot_.revert(f, json::object()).isOk());
  EXPECT_EQ(emitters_.stopped,
            (std::vector<std::string>{"hot_spot source t-h0/eth0 to t-h2/eth0 1000",
                                      "hot_spot sink t-h2/eth0 1000"}));
  EXPECT_TRUE(emitters_.running.empty());
  EXPECT_FALSE(hot_spot_.observe(f).isOk()) << "nothing is running any more";
}

TEST_F(HotSpotTest, IdlestTakesTheOtherUplinkAndOnePathNeedsNoSample) {
  ASSERT_TRUE(hot_spot_.apply(fault(steeredSet(), {{"flows", 2}, {"path", "idlest"}})).isOk());
  EXPECT_EQ(flag(1, "--source-ports"), (std::vector<std::string>{"20000,20002"}));
  ASSERT_TRUE(hot_spot_.revert(fault(steeredSet()), json::object()).isOk());

  TrafficSetTarget one = steeredSet();
  one.paths.erase(one.paths.begin());
  emitters_.started.clear();
  slept_.clear();
  ASSERT_TRUE(hot_spot_.apply(fault(one, {{"flows", 1}, {"first_source_port", 30000}})).isOk());
  EXPECT_TRUE(slept_.empty()) << "a single path is not sampled";
  EXPECT_EQ(flag(1, "--source-ports"), (std::vector<std::string>{"30001"}));
  EXPECT_EQ((*hot_spot_.observe(fault(one)))["path"]["chosen_by"], "only");
}

TEST_F(HotSpotTest, APathNoPortHashesOntoFailsWithNothingStarted) {
  forwarding_.choice = [](const std::string&, const sys::ArrivingTcpFlows&, int) {
    return std::string("up0");  // up1 is down: the leaf never hashes onto it
  };
  TrafficSetTarget set = steeredSet();
  set.paths.erase(set.paths.begin());
  const core::Status status = hot_spot_.apply(fault(set, {{"flows", 2}}));
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("only 0 of source ports 20000-24095 from 10.210.0.1 to "
                                  "10.210.1.1 leave t-l0 by up1, 2 needed"),
            std::string::npos)
      << status.message();
  EXPECT_EQ(forwarding_.asked.size(), 16u) << "4096 ports in batches of 256";
  EXPECT_TRUE(emitters_.started.empty());

  forwarding_.errors["t-l0"] = core::Status(StatusCode::kNotFound, "no such device br0");
  const core::Status lookup = hot_spot_.apply(fault(set));
  EXPECT_EQ(lookup.code(), StatusCode::kNotFound);
  EXPECT_NE(lookup.message().find("asking t-l0 for the path"), std::string::npos);
  EXPECT_TRUE(emitters_.started.empty());
}

TEST_F(HotSpotTest, UnsteeredHotSpotUsesEphemeralPortsAndEverySourceSends) {
  const Fault f = fault(TrafficSetTarget{{{"t-h0", "eth0"}, {"t-h1", "eth0"}}, {{"t-h2", "eth0"}}},
                        {{"rate_mbps", 50}, {"congestion_control", "cubic"}});
  ASSERT_TRUE(hot_spot_.apply(f).isOk());
  ASSERT_EQ(emitters_.started.size(), 3u);
  EXPECT_TRUE(flag(1, "--source-ports").empty());
  EXPECT_EQ(flag(1, "--flows"), (std::vector<std::string>{"4"}));
  EXPECT_EQ(flag(2, "--rate-mbps"), (std::vector<std::string>{"50"}));
  EXPECT_EQ(flag(2, "--congestion-control"), (std::vector<std::string>{"cubic"}));
  EXPECT_TRUE(forwarding_.asked.empty());
  EXPECT_FALSE(hot_spot_.observe(f)->contains("path"));
}

TEST_F(HotSpotTest, RefusesBadTargetsAndMissingEndpoints) {
  TrafficSetTarget set = steeredSet();
  set.paths[0].steers.clear();
  EXPECT_EQ(hot_spot_.apply(fault(set)).message(),
            "target.paths[0].steers: one per source (1), 0 given");
  EXPECT_EQ(
      hot_spot_.apply(Fault{"hot_spot", InterfaceTarget{"t-l0", "up1"}, json::object()}).message(),
      "hot_spot acts on traffic_set targets, not t-l0/up1");
  links_.setIpv4("t-h0", "eth0", {});
  auto prior = hot_spot_.capture(fault(steeredSet()));
  ASSERT_FALSE(prior.isOk());
  EXPECT_NE(prior.status().message().find("the source t-h0/eth0 has no IPv4 address"),
            std::string::npos);
  links_.removeLink("t-l0", "up1");
  links_.setIpv4("t-h0", "eth0", {"10.210.0.1"});
  EXPECT_EQ(hot_spot_.capture(fault(steeredSet())).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(emitters_.started.empty());
}

TEST(HotSpotInfoTest, UnavailableWithoutTheForwardingLookup) {
  fakes::FakeLinks links;
  fakes::FakeEmitters emitters;
  HotSpot hot_spot(&links, &emitters, nullptr, "/x");
  EXPECT_FALSE(hot_spot.info().available);
  EXPECT_EQ(hot_spot.apply(Fault{"hot_spot", steeredSet(), json::object()}).code(),
            StatusCode::kNotSupported);
}

}  // namespace
}  // namespace fabric_chaos::injectors
