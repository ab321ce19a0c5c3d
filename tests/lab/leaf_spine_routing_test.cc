// The leaf-spine lab's BGP plan (lab/leaf_spine_routing.h): one BIRD configuration per switch
// with the right AS numbers, neighbours, timers and ECMP, files kept under the run directory, and
// the convergence check read from `ip -j route` output.

#include "lab/leaf_spine_routing.h"

#include <gtest/gtest.h>

#include <string>

namespace fabric_chaos::lab {
namespace {

using nlohmann::json;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(LeafSpineRoutingTest, OneBirdPerSwitchWithEbgpOnEveryLinkAndEcmp) {
  const auto routing = leafSpineRouting("fcl", {3, 2, 2, 1}, "/run/x");
  ASSERT_EQ(routing.size(), 5u);
  EXPECT_EQ(routing[0].switch_name, "l0");
  EXPECT_EQ(routing[3].switch_name, "s0");
  EXPECT_EQ(routing[4].netns, "fcl-s1");
  EXPECT_EQ(routing[4].config_path, "/run/x/bird-s1.conf");
  EXPECT_EQ(routing[4].socket_path, "/run/x/bird-s1.ctl");
  EXPECT_EQ(routing[4].pid_path, "/run/x/bird-s1.pid");
  EXPECT_TRUE(contains(routing[4].config, "log \"/run/x/bird-s1.log\""));

  const std::string& leaf2 = routing[2].config;
  EXPECT_TRUE(contains(leaf2, "router id 10.251.0.3;"));
  EXPECT_TRUE(contains(leaf2, "local as 65103;"));
  EXPECT_TRUE(contains(leaf2, "interface \"br0\";")) << "announces its hosts' subnet";
  EXPECT_TRUE(contains(leaf2, "export where source = RTS_DEVICE;")) << "and nothing it learned";
  EXPECT_TRUE(contains(leaf2, "neighbor 10.250.2.1 as 65000;"));
  EXPECT_TRUE(contains(leaf2, "neighbor 10.250.2.3 as 65000;"));
  EXPECT_TRUE(contains(leaf2, "merge paths on")) << "ECMP in the kernel";
  EXPECT_TRUE(contains(leaf2, "check link on;")) << "a link that goes down ends its session";
  EXPECT_TRUE(contains(leaf2, "hold time 3;"));
  EXPECT_TRUE(contains(leaf2, "bfd on;")) << "a silent peer is given up in 300 ms";
  EXPECT_TRUE(contains(leaf2, "multiplier 3;"));
  EXPECT_TRUE(contains(leaf2, "min rx interval 100 ms;"));
  EXPECT_TRUE(contains(leaf2, "connect retry time 1;"));

  const std::string& spine1 = routing[4].config;
  EXPECT_TRUE(contains(spine1, "router id 10.251.1.2;"));
  EXPECT_TRUE(contains(spine1, "local as 65000;"));
  for (const char* neighbour : {"neighbor 10.250.0.2 as 65101;", "neighbor 10.250.1.2 as 65102;",
                                "neighbor 10.250.2.2 as 65103;"}) {
    EXPECT_TRUE(contains(spine1, neighbour)) << neighbour;
  }
  EXPECT_TRUE(contains(spine1, "import all; export all;")) << "a spine passes routes on";
  EXPECT_FALSE(contains(spine1, "protocol direct")) << "a spine has no hosts";
}

TEST(LeafSpineRoutingTest, ConvergedMeansEveryOtherLeafThroughEverySpine) {
  const auto expected = expectedLeafRoutes("fcl", {4, 2, 1, 2});  // 2 groups x 2 rails
  ASSERT_EQ(expected.size(), 4u);
  EXPECT_EQ(expected[1].netns, "fcl-l1");
  EXPECT_EQ(expected[1].paths, 2);
  EXPECT_EQ(expected[1].remote_subnets,
            (std::vector<std::string>{"10.210.0.0/24", "10.210.1.0/24", "10.211.1.0/24"}));

  const LeafRoutes& leaf = expected[1];
  const json two_paths = json::array({json{{"gateway", "10.250.1.1"}, {"dev", "up0"}},
                                      json{{"gateway", "10.250.1.3"}, {"dev", "up1"}}});
  json routes = json::array({
      {{"dst", "10.210.0.0/24"}, {"nexthops", two_paths}},
      {{"dst", "10.210.1.0/24"}, {"nexthops", two_paths}},
      {{"dst", "10.211.1.0/24"}, {"gateway", "10.250.1.3"}, {"dev", "up1"}},
  });
  EXPECT_EQ(unconvergedSubnets(leaf, routes), (std::vector<std::string>{"10.211.1.0/24"}))
      << "one path of two is not converged";
  routes[2] = {{"dst", "10.211.1.0/24"}, {"nexthops", two_paths}};
  EXPECT_TRUE(unconvergedSubnets(leaf, routes).empty());
  EXPECT_EQ(unconvergedSubnets(leaf, json::array()).size(), 3u);
  EXPECT_EQ(unconvergedSubnets(leaf, json()).size(), 3u) << "unreadable output converges nothing";

  LeafRoutes one_spine = leaf;
  one_spine.paths = 1;
  routes[0] = {{"dst", "10.210.0.0/24"}, {"gateway", "10.250.1.1"}};
  EXPECT_TRUE(unconvergedSubnets(one_spine, routes).empty());
}

}  // namespace
}  // namespace fabric_chaos::lab
