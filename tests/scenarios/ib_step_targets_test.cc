// IB kinds' step targets on the fabric the IB lab registers from a recorded ibnetdiscover run
// (tests/ib/fixtures; leaves l0, l1, spine s0, HCAs h0-h3, sm0 on h0, sm1 on h2), and the
// refusals between Ethernet and InfiniBand kinds and fabrics. Pure.

#include "scenarios/ib_step_targets.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "ib/ibnetdiscover.h"
#include "lab/ib_lab_plan.h"
#include "scenarios/step_targets.h"

namespace fabric_chaos::scenarios {
namespace {

using core::StatusCode;
using injectors::IbPortTarget;
using injectors::SubnetManagerTarget;

Fabric ibFabric() {
  std::ifstream in(std::string(FC_IB_FIXTURES) + "/ibnetdiscover-fat-tree-2x1x2.txt");
  std::stringstream text;
  text << in.rdbuf();
  lab::IbLabOptions options;
  options.shape = {2, 1, 2, 8};
  auto subnet = ib::parseIbnetdiscover(text.str());
  EXPECT_TRUE(subnet.isOk());
  auto fabric = lab::describeIbLab(options, *subnet);
  EXPECT_TRUE(fabric.isOk()) << fabric.status().toString();
  return *fabric;
}

FaultStep step(const std::string& kind, TargetSelector target) {
  FaultStep s;
  s.kind = kind;
  s.target = std::move(target);
  return s;
}

TargetSelector sm(const std::string& name) {
  TargetSelector t;
  t.sm = name;
  return t;
}
TargetSelector link(const std::string& id, LinkSide side = LinkSide::kSwitch) {
  TargetSelector t;
  t.link = id;
  t.side = side;
  return t;
}

TEST(IbStepTargets, SmFailoverNamesTheMasterOrAnSmByName) {
  const Fabric fabric = ibFabric();
  auto master = resolveStepTargets(step("sm_failover", sm("master")), fabric);
  ASSERT_TRUE(master.isOk()) << master.status().toString();
  ASSERT_EQ(master->size(), 1u);
  EXPECT_EQ((*master)[0].target, injectors::Target(SubnetManagerTarget{"", "h0", "fcib-subnet"}));
  EXPECT_EQ((*master)[0].host, "h0");
  auto sm1 = resolveStepTargets(step("sm_failover", sm("sm1")), fabric);
  ASSERT_TRUE(sm1.isOk());
  EXPECT_EQ((*sm1)[0].target, injectors::Target(SubnetManagerTarget{"", "h2", "fcib-subnet"}));

  auto missing = resolveStepTargets(step("sm_failover", sm("sm7")), fabric);
  ASSERT_FALSE(missing.isOk());
  EXPECT_EQ(missing.status().code(), StatusCode::kUnprocessable);
  EXPECT_EQ(missing.status().message(),
            "target sm sm7 is not in fabric ib-lab (its subnet managers: sm0, sm1)");
  auto unnamed = resolveStepTargets(step("sm_failover", link("l0-s0")), fabric);
  ASSERT_FALSE(unnamed.isOk());
  EXPECT_EQ(unnamed.status().code(), StatusCode::kInvalidArgument);
}

TEST(IbStepTargets, IbPortKindsActOnTheEndOfTheCableTheSideNames) {
  const Fabric fabric = ibFabric();
  struct Case {
    TargetSelector selector;
    IbPortTarget port;
  };
  TargetSelector h3;
  h3.host = "h3";
  TargetSelector h3_host_side = h3;
  h3_host_side.side = LinkSide::kHost;
  const Case cases[] = {
      {link("l1-s0"), {"l1", 3, "fcib-subnet"}},
      {link("l1-s0", LinkSide::kPeer), {"s0", 2, "fcib-subnet"}},
      {h3, {"l1", 2, "fcib-subnet"}},
      {h3_host_side, {"h3", 1, "fcib-subnet"}},
  };
  for (const Case& c : cases) {
    for (const char* kind : {"ib_link_down", "ib_link_flap", "ib_mad_loss"}) {
      auto targets = resolveStepTargets(step(kind, c.selector), fabric);
      ASSERT_TRUE(targets.isOk()) << c.selector.describe() << ": " << targets.status().toString();
      ASSERT_EQ(targets->size(), 1u);
      EXPECT_EQ((*targets)[0].target, injectors::Target(c.port)) << c.selector.describe();
    }
  }
  // Labels select every matching cable: leaf l0's ports towards its HCAs, then its uplink.
  TargetSelector leaf;
  leaf.labels = {{"leaf", "l0"}};
  auto ports = resolveStepTargets(step("ib_link_down", leaf), fabric);
  ASSERT_TRUE(ports.isOk()) << ports.status().toString();
  ASSERT_EQ(ports->size(), 3u);
  EXPECT_EQ((*ports)[0].target, injectors::Target(IbPortTarget{"l0", 1, "fcib-subnet"}));
  EXPECT_EQ((*ports)[1].target, injectors::Target(IbPortTarget{"l0", 2, "fcib-subnet"}));
  EXPECT_EQ((*ports)[2].target, injectors::Target(IbPortTarget{"l0", 3, "fcib-subnet"}));
  auto unknown = resolveStepTargets(step("ib_link_down", link("l0-s9")), fabric);
  EXPECT_EQ(unknown.status().code(), StatusCode::kUnprocessable);
}

TEST(IbStepTargets, EthernetAndInfinibandKindsStayOnTheirOwnFabrics) {
  const Fabric ib = ibFabric();
  auto ethernet_on_ib = resolveStepTargets(step("link_flap", link("l0-s0")), ib);
  ASSERT_FALSE(ethernet_on_ib.isOk());
  EXPECT_EQ(ethernet_on_ib.status().code(), StatusCode::kUnprocessable);
  EXPECT_NE(ethernet_on_ib.status().message().find(
                "link_flap acts on Ethernet; fabric ib-lab is an InfiniBand subnet"),
            std::string::npos);

  Fabric ethernet;
  ethernet.name = "netns-lab";
  ethernet.hosts.push_back({"h0", "fcl-h0", "local", {{"eth0", "10.200.0.1"}}, {}, ""});
  ethernet.switches.push_back({"sw0", "fcl-sw0", "br0", {"p0"}, {}, std::nullopt});
  ethernet.links.push_back({"h0-sw0", "h0", "eth0", "sw0", "p0", {}});
  auto ib_on_ethernet = resolveStepTargets(step("ib_link_down", link("h0-sw0")), ethernet);
  ASSERT_FALSE(ib_on_ethernet.isOk());
  EXPECT_EQ(ib_on_ethernet.status().code(), StatusCode::kUnprocessable);
  EXPECT_NE(ib_on_ethernet.status().message().find("fabric netns-lab is not one"),
            std::string::npos);
  auto sm_on_link_kind = resolveStepTargets(step("link_flap", sm("master")), ethernet);
  EXPECT_EQ(sm_on_link_kind.status().code(), StatusCode::kInvalidArgument);
  auto sm_on_port_kind = resolveStepTargets(step("ib_link_down", sm("master")), ib);
  EXPECT_EQ(sm_on_port_kind.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fabric_chaos::scenarios
