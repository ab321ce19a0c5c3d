// The leaf-spine lab's plan (lab/leaf_spine.h): the shape's limits, the fabric it describes
// (names, addresses, labels, switch links; valid for the fabric codec and the selectors) and the
// commands that build it (every namespace first, sysctls before interfaces, nothing in the
// initial namespace, one multipath default route per leaf, one route per leaf on each spine), and
// the leaf host ports that get the flow-hash reset.

#include "lab/leaf_spine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lab/netns_lab.h"

namespace fabric_chaos::lab {
namespace {

using core::StatusCode;
using Command = std::vector<std::string>;

LeafSpineShape shape(int leaves, int spines, int hosts_per_leaf, int rails = 1) {
  return {leaves, spines, hosts_per_leaf, rails};
}

bool hasCommand(const LeafSpineBuild& build, const Command& command) {
  return std::find(build.ip_commands.begin(), build.ip_commands.end(), command) !=
         build.ip_commands.end();
}

TEST(LeafSpineShapeTest, RefusesWhatCannotBeBuiltNamingTheFlag) {
  EXPECT_TRUE(checkLeafSpineShape(shape(2, 2, 2)).isOk());
  EXPECT_TRUE(checkLeafSpineShape(shape(8, 2, 4, 8)).isOk());
  struct Bad {
    LeafSpineShape shape;
    std::string message;
  };
  const std::vector<Bad> cases = {
      {shape(1, 2, 2), "--leaves must be between 2 and 32, got 1"},
      {shape(33, 2, 1), "--leaves must be between 2 and 32, got 33"},
      {shape(2, 0, 2), "--spines must be between 1 and 16, got 0"},
      {shape(2, 17, 2), "--spines must be between 1 and 16, got 17"},
      {shape(2, 2, 0), "--hosts-per-leaf must be between 1 and 32, got 0"},
      {shape(2, 2, 2, 9), "--rails must be between 1 and 8, got 9"},
      {shape(6, 2, 2, 4), "--leaves (6) must be a multiple of --rails (4)"},
      {shape(2, 2, 1, 2), "the fabric would have 1 hosts"},
      {shape(32, 2, 32), "the fabric would have 1024 hosts"},
  };
  for (const Bad& bad : cases) {
    const core::Status status = checkLeafSpineShape(bad.shape);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << bad.message;
    EXPECT_EQ(status.message().rfind(bad.message, 0), 0u)
        << "got: " << status.message() << "\nwant prefix: " << bad.message;
  }
}

TEST(LeafSpineDescribeTest, LeavesSpinesHostsAndLinksWithTheirLabels) {
  const scenarios::Fabric fabric = describeLeafSpine("ls", "fcl", shape(2, 3, 2));
  EXPECT_EQ(fabric.name, "ls");
  EXPECT_EQ(fabric.kind, "netns");
  ASSERT_EQ(fabric.switches.size(), 5u);
  ASSERT_EQ(fabric.hosts.size(), 4u);
  ASSERT_EQ(fabric.links.size(), 4u);
  ASSERT_EQ(fabric.switch_links.size(), 6u);

  const scenarios::Switch* leaf = fabric.findSwitch("l1");
  ASSERT_NE(leaf, nullptr);
  EXPECT_EQ(leaf->netns, "fcl-l1");
  EXPECT_EQ(leaf->bridge, "br0");
  EXPECT_EQ(leaf->ports, (std::vector<std::string>{"p0", "p1", "up0", "up1", "up2"}));
  EXPECT_EQ(leaf->labels.at("role"), "leaf");
  const scenarios::Switch* spine = fabric.findSwitch("s2");
  ASSERT_NE(spine, nullptr);
  EXPECT_EQ(spine->netns, "fcl-s2");
  EXPECT_EQ(spine->bridge, "");
  EXPECT_EQ(spine->ports, (std::vector<std::string>{"dn0", "dn1"}));
  EXPECT_EQ(spine->labels.at("role"), "spine");

  const scenarios::Host* host = fabric.findHost("h3");
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(host->netns, "fcl-h3");
  ASSERT_EQ(host->nics.size(), 1u);
  EXPECT_EQ(host->nics[0].address, "10.210.1.2");  // group 1 (leaf l1), second host
  EXPECT_EQ(host->labels.at("leaf"), "l1");
  EXPECT_EQ(host->labels.at("rack"), "r1");
  const scenarios::Link* access = fabric.findLink("h3-l1");
  ASSERT_NE(access, nullptr);
  EXPECT_EQ(access->port, "p1");
  EXPECT_EQ(access->labels.at("tier"), "access");

  const scenarios::SwitchLink* uplink = fabric.findSwitchLink("l1-s2");
  ASSERT_NE(uplink, nullptr);
  EXPECT_EQ(uplink->port, "up2");
  EXPECT_EQ(uplink->peer_switch, "s2");
  EXPECT_EQ(uplink->peer_port, "dn1");
  EXPECT_EQ(uplink->labels.at("tier"), "uplink");
  EXPECT_EQ(uplink->labels.at("spine"), "s2");

  // What it describes is a valid fabric document, and the selectors find its parts.
  auto parsed = scenarios::fabricFromJson(scenarios::toJson(fabric));
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  scenarios::TargetSelector spine_s1;
  spine_s1.labels = {{"spine", "s1"}};
  spine_s1.side = scenarios::LinkSide::kPeer;
  auto targets = scenarios::resolveTargets(spine_s1, *parsed);
  ASSERT_TRUE(targets.isOk()) << targets.status().toString();
  ASSERT_EQ(targets->size(), 2u);
  EXPECT_EQ(targets->at(1).target, injectors::Target(injectors::InterfaceTarget{"fcl-s1", "dn1"}));
}

TEST(LeafSpineDescribeTest, RailsGiveEachHostOneNicPerRailOnItsGroupsLeaves) {
  // 4 leaves in 2 groups of 2 rails; 3 hosts per group.
  const scenarios::Fabric fabric = describeLeafSpine("rails", "fcr", shape(4, 2, 3, 2));
  ASSERT_EQ(fabric.hosts.size(), 6u);
  const scenarios::Host* host = fabric.findHost("h4");  // group 1, second host
  ASSERT_NE(host, nullptr);
  ASSERT_EQ(host->nics.size(), 2u);
  EXPECT_EQ(host->nics[0].name, "eth0");
  EXPECT_EQ(host->nics[0].address, "10.210.1.2");
  EXPECT_EQ(host->nics[1].name, "eth1");
  EXPECT_EQ(host->nics[1].address, "10.211.1.2");
  EXPECT_EQ(host->labels.count("leaf"), 0u) << "a host with rails is on several leaves";
  const scenarios::Link* rail1 = fabric.findLink("h4-l3");
  ASSERT_NE(rail1, nullptr);
  EXPECT_EQ(rail1->nic, "eth1");
  EXPECT_EQ(rail1->port, "p1");
  EXPECT_EQ(rail1->labels.at("rail"), "1");
  EXPECT_EQ(fabric.findSwitch("l3")->labels.at("rail"), "1");
  EXPECT_EQ(fabric.findSwitch("l3")->labels.at("group"), "g1");

  scenarios::TargetSelector rail;
  rail.labels = {{"tier", "access"}, {"rail", "1"}};
  rail.side = scenarios::LinkSide::kHost;
  auto nics = scenarios::resolveTargets(rail, fabric);
  ASSERT_TRUE(nics.isOk()) << nics.status().toString();
  ASSERT_EQ(nics->size(), 6u) << "every host's rail-1 NIC";
  for (const auto& target : *nics) {
    EXPECT_EQ(injectors::interfaceOf(target.target)->ifname, "eth1");
  }
}

TEST(LeafSpineBuildTest, NamespacesThenSysctlsThenCommandsThatNeverTouchTheInitialNamespace) {
  const LeafSpineBuild build = leafSpineBuild("fcl", shape(2, 2, 2));
  EXPECT_EQ(build.namespaces, (std::vector<std::string>{"fcl-l0", "fcl-l1", "fcl-s0", "fcl-s1",
                                                        "fcl-h0", "fcl-h1", "fcl-h2", "fcl-h3"}));
  LabOptions options;
  options.topology = LabTopology::kLeafSpine;
  options.leaf_spine = shape(2, 2, 2);
  std::vector<std::string> sorted = build.namespaces;
  std::vector<std::string> owned = labNamespaces(options);
  std::sort(sorted.begin(), sorted.end());
  std::sort(owned.begin(), owned.end());
  EXPECT_EQ(sorted, owned) << "down and status know every namespace up makes";

  const std::set<std::string> namespaces(build.namespaces.begin(), build.namespaces.end());
  for (const Command& command : build.ip_commands) {
    ASSERT_GE(command.size(), 2u);
    EXPECT_EQ(command[0], "-n") << "runs in a lab namespace";
    EXPECT_EQ(namespaces.count(command[1]), 1u) << command[1];
    if (std::find(command.begin(), command.end(), "veth") != command.end()) {
      EXPECT_EQ(namespaces.count(command.back()), 1u) << "the peer goes straight into the lab";
    }
  }

  for (const char* sw : {"fcl-l0", "fcl-l1", "fcl-s0", "fcl-s1"}) {
    for (const NetnsSysctl& wanted :
         {NetnsSysctl{sw, "net.ipv4.ip_forward", "1"},
          NetnsSysctl{sw, "net.ipv4.fib_multipath_hash_policy", "1"},
          NetnsSysctl{sw, "net.ipv4.conf.default.ignore_routes_with_linkdown", "1"},
          NetnsSysctl{sw, "net.ipv4.conf.all.ignore_routes_with_linkdown", "1"}}) {
      EXPECT_NE(std::find(build.sysctls.begin(), build.sysctls.end(), wanted), build.sysctls.end())
          << sw << " " << wanted.key;
    }
  }
  const NetnsSysctl host_forwarding{"fcl-h0", "net.ipv4.ip_forward", "1"};
  EXPECT_EQ(std::find(build.sysctls.begin(), build.sysctls.end(), host_forwarding),
            build.sysctls.end())
      << "hosts do not route";

  EXPECT_TRUE(hasCommand(build, {"-n", "fcl-s1", "addr", "add", "10.250.1.3/31", "dev", "dn1"}));
  EXPECT_TRUE(hasCommand(build, {"-n", "fcl-l1", "addr", "add", "10.250.1.2/31", "dev", "up1"}));
  EXPECT_TRUE(hasCommand(build, {"-n", "fcl-l0", "addr", "add", "10.210.0.254/24", "dev", "br0"}));
  EXPECT_TRUE(hasCommand(build, {"-n", "fcl-h2", "addr", "add", "10.210.1.1/16", "dev", "eth0"}));
  // No static route anywhere: BGP owns the switches' routes, and hosts only have connected ones
  // (a static route through an interface is deleted for good when a fault sets it down).
  for (const Command& command : build.ip_commands) {
    EXPECT_FALSE(command.size() > 2 && command[2] == "route") << "a static route in " << command[1];
  }
  const NetnsSysctl proxy_arp{"fcl-l1", "net.ipv4.conf.default.proxy_arp", "1"};
  EXPECT_NE(std::find(build.sysctls.begin(), build.sysctls.end(), proxy_arp), build.sysctls.end());
}

TEST(LeafSpineBuildTest, EachRailHasItsOwnNicAndLeaf) {
  const LeafSpineBuild build = leafSpineBuild("fcr", shape(4, 1, 1, 2));
  EXPECT_TRUE(hasCommand(build, {"-n", "fcr-h1", "addr", "add", "10.211.1.1/16", "dev", "eth1"}));
  EXPECT_TRUE(hasCommand(build, {"-n", "fcr-h1", "link", "add", "eth1", "type", "veth", "peer",
                                 "name", "p0", "netns", "fcr-l3"}));
  EXPECT_TRUE(hasCommand(build, {"-n", "fcr-l2", "link", "add", "up0", "type", "veth", "peer",
                                 "name", "dn2", "netns", "fcr-s0"}));
}

// The VM lab's plan: its guests' taps become the leaves' host ports, so the plan builds only the
// switches, and nothing of it names a host namespace.
TEST(LeafSpineBuildTest, HostsCabledByTheCallerLeaveOnlyTheSwitches) {
  const LeafSpineBuild build = leafSpineBuild("fcv", shape(2, 2, 2), HostCabling::kByCaller);
  EXPECT_EQ(build.namespaces, (std::vector<std::string>{"fcv-l0", "fcv-l1", "fcv-s0", "fcv-s1"}));
  for (const Command& command : build.ip_commands) {
    ASSERT_GE(command.size(), 2u);
    EXPECT_EQ(command[1].rfind("fcv-h", 0), std::string::npos) << command[1];
    EXPECT_EQ(std::find(command.begin(), command.end(), "master"), command.end())
        << "no host port is enslaved before its tap exists: " << command[1];
  }
  for (const NetnsSysctl& setting : build.sysctls) {
    EXPECT_EQ(setting.netns.rfind("fcv-h", 0), std::string::npos) << setting.netns;
  }
  // The switch side is the same as with veth hosts.
  const LeafSpineBuild with_hosts = leafSpineBuild("fcv", shape(2, 2, 2));
  for (const Command& command : build.ip_commands) EXPECT_TRUE(hasCommand(with_hosts, command));
  EXPECT_TRUE(hasCommand(build, {"-n", "fcv-l0", "addr", "add", "10.210.0.254/24", "dev", "br0"}));
  EXPECT_TRUE(hasCommand(build, {"-n", "fcv-l1", "link", "add", "up0", "type", "veth", "peer",
                                 "name", "dn1", "netns", "fcv-s0"}));
}

// Where the caller cables host k, and the address it gives it: the plan's own (h<k>'s NIC).
TEST(LeafHostPortTest, IsTheAccessLinksSwitchEndAndTheHostsAddress) {
  for (const LeafSpineShape& s : {shape(2, 2, 2), shape(3, 1, 3), shape(4, 2, 1, 2)}) {
    const scenarios::Fabric fabric = describeLeafSpine("ls", "fcv", s);
    for (const scenarios::Link& link : fabric.links) {
      const int host = std::stoi(link.host.substr(1));
      const int rail = std::stoi(link.labels.at("rail"));
      EXPECT_EQ(leafHostPort("fcv", s, host, rail),
                (NetnsPort{"fcv-" + link.switch_name, link.port}))
          << link.id;
      EXPECT_EQ(leafSpineHostAddress(s, host, rail),
                fabric.hosts[static_cast<size_t>(host)].nics[static_cast<size_t>(rail)].address)
          << link.id;
    }
  }
}

TEST(LeafHostPortsTest, EveryLeafsPortToEachOfItsHostsOnEveryRail) {
  EXPECT_EQ(leafHostPorts("fcl", shape(2, 2, 2)),
            (std::vector<NetnsPort>{
                {"fcl-l0", "p0"}, {"fcl-l0", "p1"}, {"fcl-l1", "p0"}, {"fcl-l1", "p1"}}));
  // Two groups of two rails: leaves l0, l1 (group 0) and l2, l3 (group 1), one host per leaf.
  EXPECT_EQ(leafHostPorts("fcr", shape(4, 1, 1, 2)),
            (std::vector<NetnsPort>{
                {"fcr-l0", "p0"}, {"fcr-l1", "p0"}, {"fcr-l2", "p0"}, {"fcr-l3", "p0"}}));
}

TEST(LeafHostPortsTest, AreTheSwitchEndsOfTheAccessLinksAndNothingElse) {
  for (const LeafSpineShape& s : {shape(2, 2, 2), shape(4, 3, 3, 2), shape(8, 2, 2, 8)}) {
    const scenarios::Fabric fabric = describeLeafSpine("ls", "fcl", s);
    std::set<std::pair<std::string, std::string>> access_ports;
    for (const scenarios::Link& link : fabric.links) {
      ASSERT_EQ(link.labels.at("tier"), "access");
      access_ports.insert({"fcl-" + link.switch_name, link.port});
    }
    std::set<std::pair<std::string, std::string>> reset_ports;
    for (const NetnsPort& port : leafHostPorts("fcl", s)) {
      EXPECT_TRUE(reset_ports.insert({port.netns, port.ifname}).second) << "listed twice";
    }
    EXPECT_EQ(reset_ports, access_ports) << "no uplink, no spine port, no host port missing";
  }
}

}  // namespace
}  // namespace fabric_chaos::lab
