// A step's targets by its kind: interface kinds as before, traffic kinds (incast) as one traffic
// set with the selector as sink and `sources` (or every other host) as senders, and every way a
// fabric can refuse that.

#include "scenarios/step_targets.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace fabric_chaos::scenarios {
namespace {

using core::StatusCode;

// Hosts h0..h3 in namespaces t-h0..t-h3, each cabled eth0 -> sw0 port pN, all on the local agent;
// plus a switch link sw0-sw1.
Fabric starFabric() {
  Fabric fabric;
  fabric.name = "test-lab";
  fabric.kind = "netns";
  Switch sw{"sw0", "t-sw0", "br0", {}, {}, std::nullopt};
  for (int i = 0; i < 4; ++i) {
    const std::string name = "h" + std::to_string(i);
    Host host;
    host.name = name;
    host.netns = "t-" + name;
    host.nics = {{"eth0", "10.200.0." + std::to_string(i + 1)}};
    host.labels = {{"rack", i < 2 ? "r0" : "r1"}};
    fabric.hosts.push_back(host);
    sw.ports.push_back("p" + std::to_string(i));
    fabric.links.push_back({name + "-sw0", name, "eth0", "sw0", "p" + std::to_string(i), {}});
  }
  fabric.switches.push_back(sw);
  fabric.switches.push_back({"sw1", "t-sw1", "br0", {"up0"}, {}, std::nullopt});
  fabric.switch_links.push_back({"sw0-sw1", "sw0", "p9", "sw1", "up0", {}});
  return fabric;
}

FaultStep incastTo(TargetSelector target) {
  FaultStep step;
  step.kind = "incast";
  step.target = std::move(target);
  step.duration_ms = 1000;
  return step;
}

TEST(StepTargetsTest, IncastResolvesToOneTrafficSetFromTheListedSourcesToTheSink) {
  TargetSelector target;
  target.host = "h3";
  target.sources = {"h0", "h2"};
  auto resolved = resolveStepTargets(incastTo(target), starFabric());
  ASSERT_TRUE(resolved.isOk()) << resolved.status().toString();
  ASSERT_EQ(resolved->size(), 1u);
  const ResolvedTarget& only = resolved->front();
  EXPECT_EQ(only.host, "h3");
  EXPECT_EQ(only.link_id, "h3-sw0");
  EXPECT_EQ(only.other_hosts, (std::vector<std::string>{"h0", "h2"}));
  const auto* set = std::get_if<injectors::TrafficSetTarget>(&only.target);
  ASSERT_NE(set, nullptr);
  EXPECT_EQ(set->sinks, (std::vector<injectors::InterfaceTarget>{{"t-h3", "eth0"}}));
  EXPECT_EQ(set->sources,
            (std::vector<injectors::InterfaceTarget>{{"t-h0", "eth0"}, {"t-h2", "eth0"}}));
}

TEST(StepTargetsTest, WithoutSourcesEveryOtherHostSends) {
  TargetSelector target;
  target.link = "h1-sw0";
  auto resolved = resolveStepTargets(incastTo(target), starFabric());
  ASSERT_TRUE(resolved.isOk()) << resolved.status().toString();
  EXPECT_EQ(resolved->front().other_hosts, (std::vector<std::string>{"h0", "h2", "h3"}));
  const auto& set = std::get<injectors::TrafficSetTarget>(resolved->front().target);
  EXPECT_EQ(set.sinks.front(), (injectors::InterfaceTarget{"t-h1", "eth0"}));
  EXPECT_EQ(set.sources.size(), 3u);
}

TEST(StepTargetsTest, RefusesWhatTheFabricCannotSatisfy) {
  const Fabric fabric = starFabric();
  auto refusal = [&](TargetSelector target) {
    auto resolved = resolveStepTargets(incastTo(std::move(target)), fabric);
    EXPECT_FALSE(resolved.isOk());
    return resolved.isOk() ? core::Status::ok() : resolved.status();
  };
  TargetSelector self;
  self.host = "h3";
  self.sources = {"h0", "h3"};
  core::Status status = refusal(self);
  EXPECT_EQ(status.code(), StatusCode::kUnprocessable);
  EXPECT_EQ(status.message(),
            "sources[1]: host h3 is the sink; a host cannot send incast traffic to itself");

  TargetSelector unknown;
  unknown.host = "h3";
  unknown.sources = {"h9"};
  EXPECT_EQ(refusal(unknown).message(), "sources[0]: host h9 is not in fabric test-lab");

  TargetSelector many;
  many.labels = {{"rack", "r0"}};
  status = refusal(many);
  EXPECT_EQ(status.code(), StatusCode::kUnprocessable);
  EXPECT_EQ(status.message(), "target labels {rack=r0} selects 2 links; incast has one sink");

  TargetSelector between_switches;
  between_switches.link = "sw0-sw1";
  EXPECT_EQ(refusal(between_switches).message(),
            "target link sw0-sw1 is a link between switches; an incast's sink is a host");

  TargetSelector nic_side;
  nic_side.host = "h3";
  nic_side.side = LinkSide::kHost;
  status = refusal(nic_side);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "side: does not apply to incast, whose endpoints are hosts' NICs");
}

TEST(StepTargetsTest, ASetBehindSeveralAgentsIsCutIntoASinkPartAndOneSourcesPartPerAgent) {
  Fabric fabric = starFabric();
  fabric.hosts[0].agent = "http://127.0.0.1:7100";
  fabric.hosts[2].agent = "http://127.0.0.1:7100";
  fabric.hosts[1].agent = "http://127.0.0.1:7101";
  TargetSelector remote;
  remote.host = "h3";
  remote.sources = {"h0", "h1", "h2"};
  auto resolved = resolveStepTargets(incastTo(remote), fabric);
  ASSERT_TRUE(resolved.isOk()) << resolved.status().toString();
  ASSERT_EQ(resolved->size(), 3u);

  const ResolvedTarget& sink_part = (*resolved)[0];
  EXPECT_EQ(sink_part.host, "h3");
  EXPECT_EQ(sink_part.side, LinkSide::kHost) << "the sink's agent acts on it";
  EXPECT_TRUE(sink_part.other_hosts.empty());
  const auto& sink_set = std::get<injectors::TrafficSetTarget>(sink_part.target);
  EXPECT_EQ(sink_set.part, injectors::TrafficPart::kSink);
  EXPECT_TRUE(sink_set.sources.empty());
  ASSERT_EQ(sink_set.sinks.size(), 1u);
  EXPECT_EQ(sink_set.sinks[0].netns, "t-h3");

  // The sources of agent :7100 (h0 and h2, as named), then those of :7101 (h1), each part sending
  // to the address the fabric gives h3's NIC.
  const ResolvedTarget& first = (*resolved)[1];
  EXPECT_EQ(first.host, "h0");
  EXPECT_EQ(first.other_hosts, std::vector<std::string>{"h2"});
  EXPECT_EQ(first.side, LinkSide::kHost);
  const auto& first_set = std::get<injectors::TrafficSetTarget>(first.target);
  EXPECT_EQ(first_set.part, injectors::TrafficPart::kSources);
  EXPECT_EQ(first_set.sink_address, "10.200.0.4");
  ASSERT_EQ(first_set.sources.size(), 2u);
  EXPECT_EQ(first_set.sources[1].netns, "t-h2");
  const ResolvedTarget& second = (*resolved)[2];
  EXPECT_EQ(second.host, "h1");
  EXPECT_EQ(std::get<injectors::TrafficSetTarget>(second.target).sources.size(), 1u);

  // Which hosts each part's observation speaks for.
  EXPECT_EQ(trafficHostsOf(sink_part).sink, "h3");
  EXPECT_TRUE(trafficHostsOf(sink_part).sources.empty());
  EXPECT_EQ(trafficHostsOf(first).sources, (std::vector<std::string>{"h0", "h2"}));
  EXPECT_EQ(trafficHostsOf(first).sink, "");
  EXPECT_EQ(trafficHostsOf(second).sources, std::vector<std::string>{"h1"});

  // One agent for everyone: one whole set, as before.
  fabric.hosts[3].agent = "http://127.0.0.1:7100";
  fabric.hosts[1].agent = "http://127.0.0.1:7100";
  resolved = resolveStepTargets(incastTo(remote), fabric);
  ASSERT_TRUE(resolved.isOk());
  ASSERT_EQ(resolved->size(), 1u);
  EXPECT_EQ(std::get<injectors::TrafficSetTarget>((*resolved)[0].target).part,
            injectors::TrafficPart::kWhole);
  EXPECT_EQ((*resolved)[0].side, LinkSide::kHost);
  EXPECT_EQ(trafficHostsOf((*resolved)[0]).sink, "h3");
  EXPECT_EQ(trafficHostsOf((*resolved)[0]).sources, (std::vector<std::string>{"h0", "h1", "h2"}));

  // Parts need the sink's address from the fabric.
  fabric.hosts[1].agent = "http://127.0.0.1:7101";
  fabric.hosts[3].nics[0].address.clear();
  resolved = resolveStepTargets(incastTo(remote), fabric);
  ASSERT_FALSE(resolved.isOk());
  EXPECT_EQ(resolved.status().code(), StatusCode::kUnprocessable);
  EXPECT_NE(resolved.status().message().find("host h3's NIC eth0 has no address"),
            std::string::npos)
      << resolved.status().message();
}

TEST(StepTargetsTest, OnlyTrafficKindsTakeSourcesAndOthersResolveAsBefore) {
  FaultStep flap;
  flap.kind = "link_flap";
  flap.target.host = "h1";
  auto resolved = resolveStepTargets(flap, starFabric());
  ASSERT_TRUE(resolved.isOk());
  EXPECT_EQ(std::get<injectors::InterfaceTarget>(resolved->front().target),
            (injectors::InterfaceTarget{"t-sw0", "p1"}));
  EXPECT_TRUE(resolved->front().other_hosts.empty());
  EXPECT_TRUE(trafficHostsOf(resolved->front()).sources.empty());
  EXPECT_EQ(trafficHostsOf(resolved->front()).sink, "") << "an interface has no traffic hosts";

  flap.target.sources = {"h0"};
  resolved = resolveStepTargets(flap, starFabric());
  ASSERT_FALSE(resolved.isOk());
  EXPECT_EQ(resolved.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(resolved.status().message(),
            "sources: only traffic kinds (incast, hot_spot) take sources; link_flap does not");
}

// Leaves l0 (h0, h1) and l1 (h2, h3), spines s0 and s1; leaf li's port upj goes to spine sj's
// port dni.
Fabric leafSpine() {
  Fabric fabric;
  fabric.name = "ls-lab";
  fabric.kind = "netns";
  for (int leaf = 0; leaf < 2; ++leaf) {
    const std::string name = "l" + std::to_string(leaf);
    fabric.switches.push_back({name, "t-" + name, "br0", {"p0", "p1", "up0", "up1"}, {}, {}});
    for (int n = 0; n < 2; ++n) {
      const std::string host = "h" + std::to_string(leaf * 2 + n);
      Host h;
      h.name = host;
      h.netns = "t-" + host;
      h.nics = {{"eth0", "10.210." + std::to_string(leaf) + "." + std::to_string(n + 1)}};
      fabric.hosts.push_back(h);
      fabric.links.push_back(
          {host + "-" + name, host, "eth0", name, "p" + std::to_string(n), {{"rail", "0"}}});
    }
  }
  for (int spine = 0; spine < 2; ++spine) {
    const std::string name = "s" + std::to_string(spine);
    fabric.switches.push_back({name, "t-" + name, "", {"dn0", "dn1"}, {}, {}});
    for (int leaf = 0; leaf < 2; ++leaf) {
      const std::string leaf_name = "l" + std::to_string(leaf);
      fabric.switch_links.push_back({leaf_name + "-" + name,
                                     leaf_name,
                                     "up" + std::to_string(spine),
                                     name,
                                     "dn" + std::to_string(leaf),
                                     {{"tier", "uplink"}, {"leaf", leaf_name}, {"rail", "0"}}});
    }
  }
  return fabric;
}

FaultStep hotSpotAt(TargetSelector target) {
  FaultStep step = incastTo(std::move(target));
  step.kind = "hot_spot";
  return step;
}

TEST(StepTargetsTest, HotSpotOnAnUplinkSendsFromTheLeafAcrossTheFabricSteeredOntoIt) {
  TargetSelector target;
  target.link = "l0-s1";
  auto resolved = resolveStepTargets(hotSpotAt(target), leafSpine());
  ASSERT_TRUE(resolved.isOk()) << resolved.status().toString();
  ASSERT_EQ(resolved->size(), 1u);
  const ResolvedTarget& only = resolved->front();
  EXPECT_EQ(only.host, "h2") << "the first host behind another leaf receives";
  EXPECT_EQ(only.other_hosts, (std::vector<std::string>{"h0"}));
  const auto& set = std::get<injectors::TrafficSetTarget>(only.target);
  EXPECT_EQ(set.sources, (std::vector<injectors::InterfaceTarget>{{"t-h0", "eth0"}}));
  EXPECT_EQ(set.sinks, (std::vector<injectors::InterfaceTarget>{{"t-h2", "eth0"}}));
  ASSERT_EQ(set.paths.size(), 1u);
  EXPECT_EQ(set.paths[0].port, (injectors::InterfaceTarget{"t-l0", "up1"}));
  EXPECT_EQ(set.paths[0].steers, (std::vector<injectors::EcmpSteer>{{"t-l0", "br0", "up1"}}));

  // All of l0's uplinks: two candidate paths; a named sink and two sources.
  TargetSelector uplinks;
  uplinks.labels = {{"tier", "uplink"}, {"leaf", "l0"}};
  uplinks.sources = {"h0", "h1"};
  uplinks.sink = "h3";
  resolved = resolveStepTargets(hotSpotAt(uplinks), leafSpine());
  ASSERT_TRUE(resolved.isOk()) << resolved.status().toString();
  const auto& both = std::get<injectors::TrafficSetTarget>(resolved->front().target);
  EXPECT_EQ(resolved->front().host, "h3");
  ASSERT_EQ(both.paths.size(), 2u);
  EXPECT_EQ(both.paths[0].port, (injectors::InterfaceTarget{"t-l0", "up0"}));
  EXPECT_EQ(both.paths[1].steers,
            (std::vector<injectors::EcmpSteer>{{"t-l0", "br0", "up1"}, {"t-l0", "br0", "up1"}}));
}

TEST(StepTargetsTest, HotSpotDownASpinePortSteersEachSourceAtItsOwnLeaf) {
  TargetSelector target;
  target.link = "l0-s1";
  target.side = LinkSide::kPeer;
  auto resolved = resolveStepTargets(hotSpotAt(target), leafSpine());
  ASSERT_TRUE(resolved.isOk()) << resolved.status().toString();
  EXPECT_EQ(resolved->front().host, "h0") << "the sink sits on the leaf below the port";
  EXPECT_EQ(resolved->front().other_hosts, (std::vector<std::string>{"h2"}));
  const auto& set = std::get<injectors::TrafficSetTarget>(resolved->front().target);
  ASSERT_EQ(set.paths.size(), 1u);
  EXPECT_EQ(set.paths[0].port, (injectors::InterfaceTarget{"t-s1", "dn0"}));
  EXPECT_EQ(set.paths[0].steers, (std::vector<injectors::EcmpSteer>{{"t-l1", "br0", "up1"}}));
}

TEST(StepTargetsTest, HotSpotOnAHostLinkLoadsTheVictimsPortFromAcrossTheFabric) {
  TargetSelector target;
  target.host = "h1";
  auto resolved = resolveStepTargets(hotSpotAt(target), leafSpine());
  ASSERT_TRUE(resolved.isOk()) << resolved.status().toString();
  EXPECT_EQ(resolved->front().host, "h1");
  EXPECT_EQ(resolved->front().other_hosts, (std::vector<std::string>{"h2"}));
  EXPECT_TRUE(std::get<injectors::TrafficSetTarget>(resolved->front().target).paths.empty());
}

TEST(StepTargetsTest, HotSpotRefusalsNameWhatIsWrong) {
  auto refusal = [](TargetSelector target) {
    auto resolved = resolveStepTargets(hotSpotAt(std::move(target)), leafSpine());
    EXPECT_FALSE(resolved.isOk());
    return resolved.isOk() ? std::string() : resolved.status().message();
  };
  TargetSelector same_leaf;
  same_leaf.link = "l0-s1";
  same_leaf.sink = "h1";
  EXPECT_EQ(refusal(same_leaf),
            "sink: host h1 sits on l0 with the sources; its traffic would never cross an uplink");
  TargetSelector wrong_source;
  wrong_source.link = "l0-s1";
  wrong_source.sources = {"h3"};
  EXPECT_EQ(refusal(wrong_source), "sources[0]: host h3 has no link on l0");
  TargetSelector two_leaves;
  two_leaves.labels = {{"tier", "uplink"}};
  EXPECT_EQ(refusal(two_leaves),
            "target labels {tier=uplink} selects links of switches l0 and l1; a hot spot is aimed "
            "at the links of one");
  TargetSelector unknown_sink;
  unknown_sink.link = "l0-s0";
  unknown_sink.sink = "h9";
  EXPECT_EQ(refusal(unknown_sink), "sink: host h9 is not in fabric ls-lab");
  TargetSelector host_with_sink;
  host_with_sink.host = "h1";
  host_with_sink.sink = "h2";
  EXPECT_EQ(refusal(host_with_sink), "sink: the selector itself names hot_spot's sink here");

  FaultStep incast = incastTo(TargetSelector{});
  incast.target.host = "h1";
  incast.target.sink = "h2";
  auto resolved = resolveStepTargets(incast, leafSpine());
  ASSERT_FALSE(resolved.isOk());
  EXPECT_EQ(resolved.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(resolved.status().message(),
            "sink: only hot_spot on a switch link takes a sink; incast's selector names its sink");
}

}  // namespace
}  // namespace fabric_chaos::scenarios
