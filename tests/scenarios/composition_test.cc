// How faults compose on one target: table tests of checkComposition over planned actions, and the
// 422 that validateForFabric returns for a scenario whose steps cannot compose.

#include "scenarios/composition.h"

#include <gtest/gtest.h>

#include "scenarios/validate.h"

namespace fabric_chaos::scenarios {
namespace {

using core::StatusCode;

ResolvedTarget port(const std::string& ifname, const std::string& host = "h1") {
  return {host, injectors::InterfaceTarget{"fcl-sw0", ifname}, host + "-sw0", LinkSide::kSwitch};
}

// Traffic from switch ports p0 and p2 to p1.
ResolvedTarget trafficTo(const std::string& sink) {
  return {"h1",
          injectors::TrafficSetTarget{{{"fcl-sw0", "p0"}, {"fcl-sw0", "p2"}}, {{"fcl-sw0", sink}}},
          "", LinkSide::kSwitch};
}

PlannedAction action(int step, const std::string& kind, ResolvedTarget target, int64_t from,
                     int64_t to) {
  PlannedAction a;
  a.step = step;
  a.kind = kind;
  a.target = std::move(target);
  a.apply_at_ms = from;
  a.revert_at_ms = to;
  return a;
}

TEST(KindTraits, LinkFlapsStackOnTheLinkStateAndQdiscKindsOwnTheRoot) {
  EXPECT_EQ(kindTraits("link_flap").resource, "link_state");
  EXPECT_EQ(kindTraits("link_flap").composition, Composition::kStacks);
  EXPECT_EQ(kindTraits("netem").resource, "root_qdisc");
  EXPECT_EQ(kindTraits("netem").composition, Composition::kExclusive);
  EXPECT_EQ(kindTraits("packet_loss").resource, "root_qdisc");
  EXPECT_EQ(kindTraits("something_new").resource, "something_new");
  EXPECT_EQ(kindTraits("something_new").composition, Composition::kExclusive);
}

TEST(CheckComposition, Table) {
  struct Case {
    const char* name;
    std::vector<PlannedAction> actions;
    bool ok;
  };
  const std::vector<Case> cases = {
      {"crossing flaps stack",
       {action(0, "link_flap", port("p1"), 0, 2000),
        action(1, "link_flap", port("p1"), 1000, 3000)},
       true},
      {"nested flaps stack",
       {action(0, "link_flap", port("p1"), 0, 3000),
        action(1, "link_flap", port("p1"), 1000, 2000)},
       true},
      {"netem on netem overlapping",
       {action(0, "netem", port("p1"), 0, 2000), action(1, "netem", port("p1"), 1000, 3000)},
       false},
      {"loss on loss overlapping",
       {action(0, "packet_loss", port("p1"), 0, 2000),
        action(1, "packet_loss", port("p1"), 1999, 3000)},
       false},
      {"loss inside netem",
       {action(0, "netem", port("p1"), 0, 3000), action(1, "packet_loss", port("p1"), 1000, 2000)},
       false},
      {"netem back to back",
       {action(0, "netem", port("p1"), 0, 2000), action(1, "netem", port("p1"), 2000, 3000)},
       true},
      {"netem on different ports",
       {action(0, "netem", port("p1"), 0, 2000), action(1, "netem", port("p2", "h2"), 0, 2000)},
       true},
      {"flap and netem hold different parts of one port",
       {action(0, "link_flap", port("p1"), 0, 2000), action(1, "netem", port("p1"), 0, 2000)},
       true},
      {"the same NIC name on two hosts is two targets",
       {action(0, "netem", {"h1", injectors::InterfaceTarget{"", "eth0"}, "l1", LinkSide::kHost}, 0,
               2000),
        action(1, "netem", {"h2", injectors::InterfaceTarget{"", "eth0"}, "l2", LinkSide::kHost}, 0,
               2000)},
       true},
      {"a traffic set holds each of its interfaces",
       {action(0, "incast", trafficTo("p1"), 0, 2000), action(1, "incast", port("p1"), 1000, 3000)},
       false},
      {"a traffic set leaves other interfaces alone",
       {action(0, "incast", trafficTo("p1"), 0, 2000), action(1, "incast", port("p3"), 1000, 3000)},
       true},
  };
  for (const Case& c : cases) {
    core::Status status = checkComposition(c.actions);
    EXPECT_EQ(status.isOk(), c.ok) << c.name << ": " << status.toString();
    if (!c.ok) {
      EXPECT_EQ(status.code(), StatusCode::kUnprocessable) << c.name;
    }
  }
}

TEST(CheckComposition, TheRefusalNamesBothStepsTheTargetAndTheOverlap) {
  core::Status status = checkComposition(
      {action(0, "netem", port("p1"), 0, 2000), action(2, "netem", port("p1"), 1500, 3000)});
  EXPECT_EQ(status.message(),
            "steps[0] (netem) and steps[2] (netem) overlap on fcl-sw0/p1 from 1500 to 2000 ms "
            "after the baseline: both need its root_qdisc, which one fault holds at a time; move "
            "one step or put both effects in one fault");
}

TEST(CheckComposition, ARefusalBetweenATrafficSetAndAnInterfaceNamesBoth) {
  core::Status status = checkComposition(
      {action(0, "incast", trafficTo("p1"), 0, 2000), action(1, "incast", port("p2"), 500, 3000)});
  EXPECT_EQ(status.code(), StatusCode::kUnprocessable);
  EXPECT_NE(status.message().find("overlap on traffic from fcl-sw0/p0, fcl-sw0/p2 to fcl-sw0/p1 "
                                  "and fcl-sw0/p2 from 500 to 2000 ms"),
            std::string::npos)
      << status.message();
}

TEST(TargetKeys, AreScopedByWhereTheTargetLives) {
  EXPECT_EQ(targetKeys(port("p1")), (std::vector<std::string>{"local/if/fcl-sw0/p1"}));
  const ResolvedTarget nic{"h2", injectors::InterfaceTarget{"", "eth0"}, "l2", LinkSide::kHost};
  EXPECT_EQ(targetKeys(nic), (std::vector<std::string>{"host:h2/if//eth0"}));
  EXPECT_EQ(describeTarget(nic), "host h2 eth0");
  EXPECT_EQ(targetKeys(trafficTo("p1")).size(), 3u);
  // A traffic set and its mirror image hold the same interfaces but are two targets.
  ResolvedTarget mirror = trafficTo("p1");
  auto& set = std::get<injectors::TrafficSetTarget>(mirror.target);
  std::swap(set.sources, set.sinks);
  EXPECT_NE(targetKey(mirror), targetKey(trafficTo("p1")));
  EXPECT_EQ(targetKey(port("p1")), targetKey(port("p1")));
}

TEST(ValidateForFabric, OverlappingRootQdiscFaultsAreA422) {
  Fabric fabric;
  fabric.name = "t";
  fabric.kind = "netns";
  Switch sw{"sw0", "t-sw0", "br0", {}, {}, std::nullopt};
  for (int i = 0; i < 2; ++i) {
    const std::string name = "h" + std::to_string(i);
    fabric.hosts.push_back(
        Host{name, "t-" + name, "local", {{"eth0", "10.9.0." + std::to_string(i + 1)}}, {}, ""});
    sw.ports.push_back("p" + std::to_string(i));
    fabric.links.push_back({name + "-sw0", name, "eth0", "sw0", "p" + std::to_string(i), {}});
  }
  fabric.switches.push_back(sw);
  Scenario s;
  s.name = "two-losses";
  FaultStep loss;
  loss.kind = "packet_loss";
  loss.target.host = "h1";
  loss.duration_ms = 2000;
  loss.params = {{"percent", 5}};
  s.steps = {loss, loss};
  s.steps[1].at_ms = 1000;
  const KindCatalog catalog{{"link_flap", "packet_loss"}, nullptr};
  core::Status status = validateForFabric(s, fabric, catalog);
  EXPECT_EQ(status.code(), StatusCode::kUnprocessable) << status.toString();
  EXPECT_NE(status.message().find("steps[0] (packet_loss) and steps[1] (packet_loss)"),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("t-sw0/p1"), std::string::npos) << status.message();
  // One after the other is fine.
  s.steps[1].at_ms = 2000;
  EXPECT_TRUE(validateForFabric(s, fabric, catalog).isOk());
  // And validation without a fabric cannot tell (the targets are unknown).
  s.steps[1].at_ms = 1000;
  EXPECT_TRUE(validateKindsAndTiming(s, catalog).isOk());
}

}  // namespace
}  // namespace fabric_chaos::scenarios
