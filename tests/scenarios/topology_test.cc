#include "scenarios/topology.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace fabric_chaos::scenarios {
namespace {

using core::StatusCode;
using nlohmann::json;

// Four hosts h0..h3 in racks r0 (h0, h1) and r1 (h2, h3), each cabled eth0 -> sw0 port pN.
Fabric testFabric() {
  Fabric fabric;
  fabric.name = "test-lab";
  fabric.kind = "netns";
  Switch sw{"sw0", "t-sw0", "br0", {}, {{"role", "leaf"}}, std::nullopt};
  for (int i = 0; i < 4; ++i) {
    const std::string name = "h" + std::to_string(i);
    Host host;
    host.name = name;
    host.netns = "t-" + name;
    host.nics = {{"eth0", "10.200.0." + std::to_string(i + 1)}};
    host.labels = {{"rack", i < 2 ? "r0" : "r1"}, {"leaf", "sw0"}};
    fabric.hosts.push_back(host);
    sw.ports.push_back("p" + std::to_string(i));
    fabric.links.push_back({name + "-sw0", name, "eth0", "sw0", "p" + std::to_string(i), {}});
  }
  fabric.switches.push_back(sw);
  return fabric;
}

// Two leaves l0, l1 (rail 0 and rail 1 of one group) and two spines s0, s1, every leaf cabled
// to every spine (l<i> port up<j> <-> s<j> port dn<i>). Hosts a and b have two NICs: eth<r> is
// cabled to leaf l<r> port p<host>.
Fabric leafSpineFabric() {
  Fabric fabric;
  fabric.name = "ls";
  fabric.kind = "netns";
  for (int leaf = 0; leaf < 2; ++leaf) {
    const std::string name = "l" + std::to_string(leaf);
    fabric.switches.push_back(
        {name, "ls-" + name, "br0", {"p0", "p1", "up0", "up1"}, {{"role", "leaf"}}, std::nullopt});
  }
  for (int spine = 0; spine < 2; ++spine) {
    const std::string name = "s" + std::to_string(spine);
    fabric.switches.push_back(
        {name, "ls-" + name, "", {"dn0", "dn1"}, {{"role", "spine"}}, std::nullopt});
  }
  for (int h = 0; h < 2; ++h) {
    const std::string name = h == 0 ? "a" : "b";
    fabric.hosts.push_back(Host{name,
                                "ls-" + name,
                                "local",
                                {{"eth0", "10.210.0." + std::to_string(h + 1)},
                                 {"eth1", "10.211.0." + std::to_string(h + 1)}},
                                {{"group", "g0"}, {"rail", "host-label"}},
                                ""});
    for (int rail = 0; rail < 2; ++rail) {
      const std::string leaf = "l" + std::to_string(rail);
      fabric.links.push_back(
          {name + "-" + leaf,
           name,
           "eth" + std::to_string(rail),
           leaf,
           "p" + std::to_string(h),
           {{"tier", "access"}, {"rail", std::to_string(rail)}, {"leaf", leaf}}});
    }
  }
  for (int leaf = 0; leaf < 2; ++leaf) {
    for (int spine = 0; spine < 2; ++spine) {
      const std::string l = "l" + std::to_string(leaf);
      const std::string sp = "s" + std::to_string(spine);
      fabric.switch_links.push_back(
          {l + "-" + sp,
           l,
           "up" + std::to_string(spine),
           sp,
           "dn" + std::to_string(leaf),
           {{"tier", "uplink"}, {"leaf", l}, {"spine", sp}, {"rail", std::to_string(leaf)}}});
    }
  }
  return fabric;
}

TEST(FabricJsonTest, RoundTrips) {
  const Fabric fabric = testFabric();
  const json encoded = toJson(fabric);
  auto parsed = fabricFromJson(json::parse(encoded.dump()));
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(toJson(parsed.value()), encoded);
  EXPECT_EQ(parsed->name, "test-lab");
  EXPECT_EQ(parsed->kind, "netns");
  ASSERT_EQ(parsed->hosts.size(), 4u);
  EXPECT_EQ(parsed->hosts[2].nics[0].address, "10.200.0.3");
  EXPECT_EQ(parsed->hosts[2].labels.at("rack"), "r1");
  EXPECT_EQ(parsed->links[3].switch_name, "sw0");
  EXPECT_EQ(encoded["links"][3]["switch"], "sw0");
}

TEST(FabricJsonTest, OptionalFieldsDefault) {
  auto parsed = fabricFromJson(json::parse(R"({
    "name": "tiny",
    "hosts": [{"name": "a"}, {"name": "b", "nics": [{"name": "eth0"}]}]
  })"));
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(parsed->kind, "");
  EXPECT_EQ(parsed->hosts[0].agent, "local");
  EXPECT_EQ(parsed->hosts[0].netns, "");
  EXPECT_TRUE(parsed->hosts[0].nics.empty());
  EXPECT_TRUE(parsed->switches.empty());
  EXPECT_TRUE(parsed->links.empty());
}

struct FabricErrorCase {
  std::string name;
  std::function<void(json&)> mutate;
  std::string expected;  // the message must start with this
};

std::vector<FabricErrorCase> fabricErrorCases() {
  return {
      {"NotAnObject", [](json& d) { d = 3; }, "fabric: must be a JSON object"},
      {"Unknown", [](json& d) { d["racks"] = 2; }, "racks: unknown field"},
      {"NameMissing", [](json& d) { d.erase("name"); }, "name: required"},
      {"OffloadsNotBoolean", [](json& d) { d["segmentation_offloads"] = "on"; },
       "segmentation_offloads: must be a boolean"},
      {"NameEmpty", [](json& d) { d["name"] = ""; }, "name: must be a non-empty string"},
      {"HostsMissing", [](json& d) { d.erase("hosts"); }, "hosts: required"},
      {"HostsNotArray", [](json& d) { d["hosts"] = json::object(); }, "hosts: must be an array"},
      {"HostUnknownField", [](json& d) { d["hosts"][1]["rack"] = "r0"; },
       "hosts[1].rack: unknown field"},
      {"HostNameMissing", [](json& d) { d["hosts"][2].erase("name"); }, "hosts[2].name: required"},
      {"HostDuplicate", [](json& d) { d["hosts"][1]["name"] = "h0"; },
       "hosts[1].name: duplicate host h0"},
      {"NicDuplicate",
       [](json& d) {
         d["hosts"][0]["nics"].push_back({{"name", "eth0"}});
       },
       "hosts[0].nics[1].name: duplicate nic eth0 on host h0"},
      {"LabelNotString", [](json& d) { d["hosts"][0]["labels"]["rack"] = 0; },
       "hosts[0].labels.rack: must be a string"},
      {"SwitchDuplicate", [](json& d) { d["switches"].push_back(d["switches"][0]); },
       "switches[1].name: duplicate switch sw0"},
      {"PortDuplicate", [](json& d) { d["switches"][0]["ports"][2] = "p0"; },
       "switches[0].ports[2]: duplicate port p0 on switch sw0"},
      {"LinkFieldMissing", [](json& d) { d["links"][0].erase("port"); }, "links[0].port: required"},
      {"LinkUnknownHost", [](json& d) { d["links"][0]["host"] = "h9"; },
       "links[0].host: unknown host h9"},
      {"LinkUnknownNic", [](json& d) { d["links"][1]["nic"] = "eth1"; },
       "links[1].nic: host h1 has no nic eth1"},
      {"LinkUnknownSwitch", [](json& d) { d["links"][2]["switch"] = "sw9"; },
       "links[2].switch: unknown switch sw9"},
      {"LinkUnknownPort", [](json& d) { d["links"][3]["port"] = "p9"; },
       "links[3].port: switch sw0 has no port p9"},
      {"LinkDuplicateId", [](json& d) { d["links"][1]["id"] = "h0-sw0"; },
       "links[1].id: duplicate link h0-sw0"},
      {"PortCabledTwice", [](json& d) { d["links"][1]["port"] = "p0"; },
       "links[1].port: port p0 of switch sw0 is already cabled by link h0-sw0"},
      {"NicCabledTwice",
       [](json& d) {
         d["links"].push_back(
             {{"id", "h0-b"}, {"host", "h0"}, {"nic", "eth0"}, {"switch", "sw0"}, {"port", "p3"}});
       },
       "links[4].nic: nic eth0 of host h0 is already cabled by link h0-sw0"},
  };
}

// `base` is a valid fabric; the case's mutation must make the parser refuse it, naming the field.
void expectRefused(const Fabric& base, const FabricErrorCase& c) {
  json doc = toJson(base);
  ASSERT_TRUE(fabricFromJson(doc).isOk()) << fabricFromJson(doc).status().toString();
  c.mutate(doc);
  auto parsed = fabricFromJson(doc);
  ASSERT_FALSE(parsed.isOk()) << doc.dump();
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message().rfind(c.expected, 0), 0u)
      << "got: " << parsed.status().message() << "\nwant prefix: " << c.expected;
}

class FabricErrorTest : public testing::TestWithParam<FabricErrorCase> {};

std::vector<FabricErrorCase> switchLinkErrorCases() {
  return {
      {"FieldMissing", [](json& d) { d["switch_links"][0].erase("peer_port"); },
       "switch_links[0].peer_port: required"},
      {"UnknownField", [](json& d) { d["switch_links"][0]["speed"] = 1; },
       "switch_links[0].speed: unknown field"},
      {"UnknownSwitch", [](json& d) { d["switch_links"][1]["peer_switch"] = "s9"; },
       "switch_links[1].peer_switch: unknown switch s9"},
      {"UnknownPort", [](json& d) { d["switch_links"][1]["port"] = "up7"; },
       "switch_links[1].port: switch l0 has no port up7"},
      {"SameSwitch", [](json& d) { d["switch_links"][0]["peer_switch"] = "l0"; },
       "switch_links[0].peer_switch: a link joins two different switches"},
      {"DuplicateIdOfAHostLink", [](json& d) { d["switch_links"][2]["id"] = "a-l0"; },
       "switch_links[2].id: duplicate link a-l0"},
      {"PortCabledToAHost", [](json& d) { d["switch_links"][0]["port"] = "p0"; },
       "switch_links[0].port: port p0 of switch l0 is already cabled by link a-l0"},
      {"PeerPortCabledTwice", [](json& d) { d["switch_links"][3]["peer_port"] = "dn0"; },
       "switch_links[3].peer_port: port dn0 of switch s1 is already cabled by link l0-s1"},
      {"LabelNotString", [](json& d) { d["switch_links"][0]["labels"]["tier"] = 1; },
       "switch_links[0].labels.tier: must be a string"},
      {"HostLinkLabelNotString", [](json& d) { d["links"][0]["labels"]["rail"] = 0; },
       "links[0].labels.rail: must be a string"},
  };
}

class SwitchLinkErrorTest : public testing::TestWithParam<FabricErrorCase> {};

TEST_P(SwitchLinkErrorTest, NamesTheField) { expectRefused(leafSpineFabric(), GetParam()); }

INSTANTIATE_TEST_SUITE_P(Table, SwitchLinkErrorTest, testing::ValuesIn(switchLinkErrorCases()),
                         [](const testing::TestParamInfo<FabricErrorCase>& info) {
                           return info.param.name;
                         });

TEST(FabricJsonTest, LeafSpineRoundTripsWithLinkLabels) {
  const Fabric fabric = leafSpineFabric();
  const json encoded = toJson(fabric);
  auto parsed = fabricFromJson(json::parse(encoded.dump()));
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(toJson(parsed.value()), encoded);
  ASSERT_EQ(parsed->switch_links.size(), 4u);
  const SwitchLink* link = parsed->findSwitchLink("l1-s0");
  ASSERT_NE(link, nullptr);
  EXPECT_EQ(link->port, "up0");
  EXPECT_EQ(link->peer_switch, "s0");
  EXPECT_EQ(link->peer_port, "dn1");
  EXPECT_EQ(link->labels.at("tier"), "uplink");
  EXPECT_EQ(parsed->findLink("b-l1")->labels.at("rail"), "1");
  EXPECT_EQ(parsed->findSwitchLink("a-l0"), nullptr) << "host links are not switch links";
  // A single-switch fabric's document stays as it was: no switch_links, no link labels.
  const json star = toJson(testFabric());
  EXPECT_FALSE(star.contains("switch_links"));
  EXPECT_FALSE(star["links"][0].contains("labels"));
  EXPECT_FALSE(star.contains("segmentation_offloads"));
}

TEST_P(FabricErrorTest, NamesTheField) { expectRefused(testFabric(), GetParam()); }

INSTANTIATE_TEST_SUITE_P(Table, FabricErrorTest, testing::ValuesIn(fabricErrorCases()),
                         [](const testing::TestParamInfo<FabricErrorCase>& info) {
                           return info.param.name;
                         });

TEST(FabricTest, Find) {
  const Fabric fabric = testFabric();
  ASSERT_NE(fabric.findHost("h2"), nullptr);
  EXPECT_EQ(fabric.findHost("h2")->netns, "t-h2");
  EXPECT_EQ(fabric.findHost("h9"), nullptr);
  ASSERT_NE(fabric.findSwitch("sw0"), nullptr);
  EXPECT_EQ(fabric.findSwitch("sw1"), nullptr);
  ASSERT_NE(fabric.findLink("h3-sw0"), nullptr);
  EXPECT_EQ(fabric.findLink("h3-sw0")->port, "p3");
  EXPECT_EQ(fabric.findLink("h3-sw1"), nullptr);
}

TargetSelector hostSel(const std::string& host, LinkSide side = LinkSide::kSwitch) {
  TargetSelector s;
  s.host = host;
  s.side = side;
  return s;
}

void expectTarget(const ResolvedTarget& t, const std::string& host, const std::string& link,
                  const std::string& netns, const std::string& ifname, LinkSide side) {
  EXPECT_EQ(t.host, host);
  EXPECT_EQ(t.link_id, link);
  EXPECT_EQ(t.target, injectors::Target(injectors::InterfaceTarget{netns, ifname}));
  EXPECT_EQ(t.side, side);
}

TEST(ResolveTargetsTest, HostSwitchSideIsTheSwitchPort) {
  auto targets = resolveTargets(hostSel("h1"), testFabric());
  ASSERT_TRUE(targets.isOk()) << targets.status().toString();
  ASSERT_EQ(targets->size(), 1u);
  expectTarget((*targets)[0], "h1", "h1-sw0", "t-sw0", "p1", LinkSide::kSwitch);
}

TEST(ResolveTargetsTest, HostHostSideIsTheNic) {
  auto targets = resolveTargets(hostSel("h1", LinkSide::kHost), testFabric());
  ASSERT_TRUE(targets.isOk()) << targets.status().toString();
  ASSERT_EQ(targets->size(), 1u);
  expectTarget((*targets)[0], "h1", "h1-sw0", "t-h1", "eth0", LinkSide::kHost);
}

TEST(ResolveTargetsTest, HostMeansItsFirstLink) {
  Fabric fabric = testFabric();
  fabric.hosts[2].nics.push_back({"eth1", "10.201.0.3"});
  fabric.switches[0].ports.push_back("p9");
  // Listed before h2's eth0 link: "first" is the fabric's link order.
  fabric.links.insert(fabric.links.begin(), {"h2-b", "h2", "eth1", "sw0", "p9", {}});
  auto targets = resolveTargets(hostSel("h2", LinkSide::kHost), fabric);
  ASSERT_TRUE(targets.isOk()) << targets.status().toString();
  ASSERT_EQ(targets->size(), 1u);
  expectTarget((*targets)[0], "h2", "h2-b", "t-h2", "eth1", LinkSide::kHost);
}

TEST(ResolveTargetsTest, Link) {
  TargetSelector s;
  s.link = "h3-sw0";
  auto targets = resolveTargets(s, testFabric());
  ASSERT_TRUE(targets.isOk()) << targets.status().toString();
  ASSERT_EQ(targets->size(), 1u);
  expectTarget((*targets)[0], "h3", "h3-sw0", "t-sw0", "p3", LinkSide::kSwitch);
  s.side = LinkSide::kHost;
  targets = resolveTargets(s, testFabric());
  ASSERT_TRUE(targets.isOk());
  expectTarget((*targets)[0], "h3", "h3-sw0", "t-h3", "eth0", LinkSide::kHost);
}

TEST(ResolveTargetsTest, LabelsMatchEveryHostWithAllPairs) {
  Fabric fabric = testFabric();
  fabric.hosts[3].labels["rail"] = "1";
  TargetSelector s;
  s.labels = {{"rack", "r1"}};
  auto targets = resolveTargets(s, fabric);
  ASSERT_TRUE(targets.isOk()) << targets.status().toString();
  ASSERT_EQ(targets->size(), 2u);
  expectTarget((*targets)[0], "h2", "h2-sw0", "t-sw0", "p2", LinkSide::kSwitch);
  expectTarget((*targets)[1], "h3", "h3-sw0", "t-sw0", "p3", LinkSide::kSwitch);

  s.labels["rail"] = "1";
  s.side = LinkSide::kHost;
  targets = resolveTargets(s, fabric);
  ASSERT_TRUE(targets.isOk()) << targets.status().toString();
  ASSERT_EQ(targets->size(), 1u);
  expectTarget((*targets)[0], "h3", "h3-sw0", "t-h3", "eth0", LinkSide::kHost);
}

TEST(ResolveTargetsTest, ASwitchLinkHasALowerAndAnUpperEndAndNoHost) {
  const Fabric fabric = leafSpineFabric();
  TargetSelector s;
  s.link = "l1-s0";
  auto lower = resolveTargets(s, fabric);
  ASSERT_TRUE(lower.isOk()) << lower.status().toString();
  ASSERT_EQ(lower->size(), 1u);
  expectTarget((*lower)[0], "", "l1-s0", "ls-l1", "up0", LinkSide::kSwitch);

  s.side = LinkSide::kPeer;
  auto upper = resolveTargets(s, fabric);
  ASSERT_TRUE(upper.isOk()) << upper.status().toString();
  expectTarget((*upper)[0], "", "l1-s0", "ls-s0", "dn1", LinkSide::kPeer);

  s.side = LinkSide::kHost;
  auto host = resolveTargets(s, fabric);
  EXPECT_EQ(host.status().code(), StatusCode::kUnprocessable);
  EXPECT_EQ(host.status().message(),
            "target link l1-s0: link l1-s0 joins switches l1 and s0: it has no host side (use "
            "side \"switch\" or \"peer\")");

  TargetSelector host_link;
  host_link.link = "a-l0";
  host_link.side = LinkSide::kPeer;
  auto peer = resolveTargets(host_link, fabric);
  EXPECT_EQ(peer.status().code(), StatusCode::kUnprocessable);
  EXPECT_NE(peer.status().message().find("joins host a to switch l0"), std::string::npos)
      << peer.status().message();
}

TEST(ResolveTargetsTest, LabelsSelectSpinesUplinksAndRailsThroughLinkLabels) {
  const Fabric fabric = leafSpineFabric();
  // "Spine s1 fails": every link to it, at the spine's own ports.
  TargetSelector spine;
  spine.labels = {{"spine", "s1"}};
  spine.side = LinkSide::kPeer;
  auto spine_ports = resolveTargets(spine, fabric);
  ASSERT_TRUE(spine_ports.isOk()) << spine_ports.status().toString();
  ASSERT_EQ(spine_ports->size(), 2u);
  expectTarget((*spine_ports)[0], "", "l0-s1", "ls-s1", "dn0", LinkSide::kPeer);
  expectTarget((*spine_ports)[1], "", "l1-s1", "ls-s1", "dn1", LinkSide::kPeer);

  // "The uplinks of leaf l0" at the leaf.
  TargetSelector uplinks;
  uplinks.labels = {{"tier", "uplink"}, {"leaf", "l0"}};
  auto leaf_ports = resolveTargets(uplinks, fabric);
  ASSERT_TRUE(leaf_ports.isOk()) << leaf_ports.status().toString();
  ASSERT_EQ(leaf_ports->size(), 2u);
  expectTarget((*leaf_ports)[0], "", "l0-s0", "ls-l0", "up0", LinkSide::kSwitch);
  expectTarget((*leaf_ports)[1], "", "l0-s1", "ls-l0", "up1", LinkSide::kSwitch);

  // "Rail 1" of the hosts: a link's own label wins over its host's ("host-label").
  TargetSelector rail;
  rail.labels = {{"tier", "access"}, {"rail", "1"}};
  rail.side = LinkSide::kHost;
  auto nics = resolveTargets(rail, fabric);
  ASSERT_TRUE(nics.isOk()) << nics.status().toString();
  ASSERT_EQ(nics->size(), 2u);
  expectTarget((*nics)[0], "a", "a-l1", "ls-a", "eth1", LinkSide::kHost);
  expectTarget((*nics)[1], "b", "b-l1", "ls-b", "eth1", LinkSide::kHost);

  // A host label selects every NIC of the host, each through its own link.
  TargetSelector group;
  group.labels = {{"group", "g0"}};
  auto group_ports = resolveTargets(group, fabric);
  ASSERT_TRUE(group_ports.isOk()) << group_ports.status().toString();
  ASSERT_EQ(group_ports->size(), 4u);
  expectTarget((*group_ports)[1], "a", "a-l1", "ls-l1", "p0", LinkSide::kSwitch);

  // Everything on leaf l0 (its host ports and its uplinks): side host cannot apply to all.
  TargetSelector leaf;
  leaf.labels = {{"leaf", "l0"}};
  auto whole_leaf = resolveTargets(leaf, fabric);
  ASSERT_TRUE(whole_leaf.isOk()) << whole_leaf.status().toString();
  EXPECT_EQ(whole_leaf->size(), 4u);
  leaf.side = LinkSide::kHost;
  EXPECT_EQ(resolveTargets(leaf, fabric).status().code(), StatusCode::kUnprocessable);
}

struct MissingCase {
  std::string name;
  TargetSelector selector;
  std::string message;
};

TEST(ResolveTargetsTest, NothingMatchedIsUnprocessableAndNamesTheSelector) {
  Fabric fabric = testFabric();
  fabric.hosts.push_back(Host{"h4", "t-h4", "local", {}, {{"rack", "r2"}}, ""});
  TargetSelector link;
  link.link = "h9-sw0";
  TargetSelector labels;
  labels.labels = {{"rack", "r9"}};
  TargetSelector unlinked;
  unlinked.labels = {{"rack", "r2"}};
  const std::vector<MissingCase> cases = {
      {"UnknownHost", hostSel("h9"), "target host h9 is not in fabric test-lab"},
      {"HostWithoutLink", hostSel("h4"), "target host h4 has no link in fabric test-lab"},
      {"UnknownLink", link, "target link h9-sw0 is not in fabric test-lab"},
      {"NoLabelMatch", labels, "target labels {rack=r9} matches no link in fabric test-lab"},
      {"LabelMatchWithoutLink", unlinked,
       "target labels {rack=r2} matches host h4, which has no link in fabric test-lab"},
  };
  for (const MissingCase& c : cases) {
    auto targets = resolveTargets(c.selector, fabric);
    ASSERT_FALSE(targets.isOk()) << c.name;
    EXPECT_EQ(targets.status().code(), StatusCode::kUnprocessable) << c.name;
    EXPECT_EQ(targets.status().message(), c.message) << c.name;
  }
}

TEST(ResolveTargetsTest, MalformedSelectorIsInvalidArgument) {
  TargetSelector none;
  EXPECT_EQ(resolveTargets(none, testFabric()).status().code(), StatusCode::kInvalidArgument);
  TargetSelector two = hostSel("h1");
  two.link = "h1-sw0";
  EXPECT_EQ(resolveTargets(two, testFabric()).status().code(), StatusCode::kInvalidArgument);
}

TEST(ResolveTargetsTest, DanglingSwitchInCodeBuiltFabricIsUnprocessable) {
  Fabric fabric = testFabric();
  fabric.switches.clear();
  auto targets = resolveTargets(hostSel("h0"), fabric);
  ASSERT_FALSE(targets.isOk());
  EXPECT_EQ(targets.status().code(), StatusCode::kUnprocessable);
  EXPECT_NE(targets.status().message().find("sw0"), std::string::npos);
}

}  // namespace
}  // namespace fabric_chaos::scenarios
