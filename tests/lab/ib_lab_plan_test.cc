// The IB lab's plan: options refused with one sentence, SM placement and configuration, the
// attached command line, and the fabric registered from a recorded ibnetdiscover run of the lab's
// own subnet (tests/ib/fixtures, leaves 2, spines 1, 2 hosts per leaf). Pure.

#include "lab/ib_lab_plan.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "ib/ibnetdiscover.h"

namespace fabric_chaos::lab {
namespace {

IbLabOptions fixtureOptions() {
  IbLabOptions options;
  options.shape = {2, 1, 2, 8};
  options.state_dir = "/run/fc-test";
  return options;
}

ib::IbSubnet fixtureSubnet() {
  std::ifstream in(std::string(FC_IB_FIXTURES) + "/ibnetdiscover-fat-tree-2x1x2.txt");
  std::stringstream text;
  text << in.rdbuf();
  auto subnet = ib::parseIbnetdiscover(text.str());
  EXPECT_TRUE(subnet.isOk()) << subnet.status().toString();
  return subnet.isOk() ? *subnet : ib::IbSubnet{};
}

TEST(IbLabPlan, RefusesOptionsItCannotBuildWithOneSentence) {
  struct Case {
    void (*change)(IbLabOptions&);
    const char* says;
  };
  const Case cases[] = {
      {[](IbLabOptions& o) { o.shape.spines = 0; }, "at least one spine"},
      {[](IbLabOptions& o) { o.shape.hosts_per_leaf = 40; }, "a leaf needs 41 ports"},
      {[](IbLabOptions& o) { o.subnet_managers = 0; }, "--subnet-managers must be 1, 2 or 3"},
      {[](IbLabOptions& o) { o.subnet_managers = 4; }, "--subnet-managers must be 1, 2 or 3"},
      {[](IbLabOptions& o) {
         o.shape = {1, 1, 2, 8};
         o.subnet_managers = 2;
       },
       "2 SMs on 2 hosts"},
      {[](IbLabOptions& o) { o.sm_polling_timeout_ms = 10; }, "--sm-polling-ms"},
      {[](IbLabOptions& o) { o.sm_polling_retries = 0; }, "--sm-retries"},
      {[](IbLabOptions& o) { o.name = "IB lab"; }, "--name"},
      {[](IbLabOptions& o) { o.prefix = "much-too-long"; }, "--prefix"},
  };
  ASSERT_TRUE(checkIbLabOptions(fixtureOptions()).isOk());
  for (const Case& c : cases) {
    IbLabOptions options = fixtureOptions();
    c.change(options);
    const core::Status status = checkIbLabOptions(options);
    ASSERT_FALSE(status.isOk()) << c.says;
    EXPECT_EQ(status.code(), core::StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find(c.says), std::string::npos) << status.message();
  }
}

TEST(IbLabPlan, PlacesTheSmsOnDifferentLeavesWithFallingPriorities) {
  IbLabOptions options = fixtureOptions();
  options.shape = {2, 2, 3, 36};
  options.subnet_managers = 3;
  const auto sms = placeSubnetManagers(options);
  ASSERT_EQ(sms.size(), 3u);
  // l0's first host, l1's first host, then l0's second.
  EXPECT_EQ(sms[0].host, "h0");
  EXPECT_EQ(sms[1].host, "h3");
  EXPECT_EQ(sms[2].host, "h1");
  EXPECT_EQ(sms[0].priority, 14);
  EXPECT_EQ(sms[1].priority, 13);
  EXPECT_EQ(sms[2].priority, 12);
  EXPECT_EQ(sms[1].name, "sm1");
  EXPECT_EQ(sms[1].config, "/run/fc-test/ib/ib-lab/sm1/opensm.conf");
  // The observer is the last host, which runs no SM.
  EXPECT_EQ(observerNode(options), "h5");
}

TEST(IbLabPlan, TheOpenSmConfigurationCarriesPriorityTimersAndPaths) {
  IbLabOptions options = fixtureOptions();
  options.sm_polling_timeout_ms = 1000;
  options.sm_polling_retries = 2;
  const auto sms = placeSubnetManagers(options);
  const std::string config = openSmConfig(options, sms[1], "/d/sm1");
  for (const char* line : {"\nsm_priority 13\n", "\nsminfo_polling_timeout 1000\n",
                           "\npolling_retry_number 2\n", "\nlog_file /d/sm1/opensm.log\n",
                           "\nforce_log_flush TRUE\n", "\ndump_files_dir /d/sm1\n"}) {
    EXPECT_NE(config.find(line), std::string::npos) << line << " in\n" << config;
  }
}

TEST(IbLabPlan, AttachesProgramsToANodeInItsOwnDirectory) {
  const scenarios::IbSimulator sim = simulatorOf(fixtureOptions());
  EXPECT_EQ(sim.netns, "fcib-subnet");
  EXPECT_EQ(sim.console, "/run/fc-test/ib/ib-lab/console");
  const std::vector<std::string> expected = {"ip",
                                             "netns",
                                             "exec",
                                             "fcib-subnet",
                                             "env",
                                             "-C",
                                             "/run/fc-test/ib/ib-lab/at/h3",
                                             "SIM_HOST=h3",
                                             "LD_PRELOAD=" + sim.preload,
                                             "sminfo",
                                             "4"};
  EXPECT_EQ(attachedArgv(sim, "h3", {"sminfo", "4"}), expected);
  const auto env = attachedEnvironment(sim, "h0", "/d/sm0");
  EXPECT_NE(std::find(env.begin(), env.end(), "SIM_HOST=h0"), env.end());
  EXPECT_NE(std::find(env.begin(), env.end(), "OSM_CACHE_DIR=/d/sm0"), env.end());
}

TEST(IbLabPlan, RegistersTheDiscoveredSubnetAsAFabric) {
  auto fabric = describeIbLab(fixtureOptions(), fixtureSubnet());
  ASSERT_TRUE(fabric.isOk()) << fabric.status().toString();
  EXPECT_EQ(fabric->kind, "ib");
  ASSERT_EQ(fabric->hosts.size(), 4u);
  ASSERT_EQ(fabric->switches.size(), 3u);
  ASSERT_EQ(fabric->links.size(), 4u);
  ASSERT_EQ(fabric->switch_links.size(), 2u);
  const scenarios::Host* h0 = fabric->findHost("h0");
  ASSERT_NE(h0, nullptr);
  EXPECT_EQ(h0->netns, "fcib-subnet");
  EXPECT_EQ(h0->labels.at("role"), "hca");
  EXPECT_EQ(h0->labels.at("leaf"), "l0");
  EXPECT_EQ(h0->labels.at("sm"), "sm0");
  EXPECT_EQ(h0->labels.at("guid"), "0x0000000000100000");
  ASSERT_EQ(h0->nics.size(), 1u);
  EXPECT_EQ(h0->nics[0].name, "port1");
  EXPECT_EQ(fabric->findHost("h2")->labels.at("sm"), "sm1");
  EXPECT_EQ(fabric->findHost("h3")->labels.count("sm"), 0u);
  const scenarios::Switch* s0 = fabric->findSwitch("s0");
  ASSERT_NE(s0, nullptr);
  EXPECT_EQ(s0->labels.at("role"), "spine");
  EXPECT_EQ(s0->labels.at("lid"), "2");
  const scenarios::Link* h3 = fabric->findLink("h3-l1");
  ASSERT_NE(h3, nullptr);
  EXPECT_EQ(h3->switch_name, "l1");
  EXPECT_EQ(h3->port, "2");
  const scenarios::SwitchLink* uplink = fabric->findSwitchLink("l1-s0");
  ASSERT_NE(uplink, nullptr);
  EXPECT_EQ(uplink->port, "3");
  EXPECT_EQ(uplink->peer_port, "2");
  EXPECT_EQ(uplink->labels.at("spine"), "s0");
  ASSERT_TRUE(fabric->ib.has_value());
  ASSERT_EQ(fabric->ib->subnet_managers.size(), 2u);
  EXPECT_EQ(fabric->ib->subnet_managers[0].port_guid, "0x0000000000100001");
  EXPECT_EQ(fabric->ib->subnet_managers[1].host, "h2");
  ASSERT_TRUE(fabric->ib->simulator.has_value());
  EXPECT_EQ(fabric->ib->simulator->netns, "fcib-subnet");

  // The description survives its own JSON, as serve reads it from the fabric file.
  auto again = scenarios::fabricFromJson(scenarios::toJson(*fabric));
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ(scenarios::toJson(*again), scenarios::toJson(*fabric));
  EXPECT_EQ(again->ib, fabric->ib);
}

TEST(IbLabPlan, ASubnetWithoutTheSmHostIsRefused) {
  ib::IbSubnet subnet = fixtureSubnet();
  std::erase_if(subnet.links, [&](const ib::IbLink& link) {
    const ib::IbNode* a = ib::findNode(subnet, link.a.node_guid);
    const ib::IbNode* b = ib::findNode(subnet, link.b.node_guid);
    return a->description == "h2" || b->description == "h2";
  });
  auto fabric = describeIbLab(fixtureOptions(), subnet);
  ASSERT_FALSE(fabric.isOk());
  EXPECT_EQ(fabric.status().code(), core::StatusCode::kFailedPrecondition);
  EXPECT_NE(fabric.status().message().find("h2, where sm1 runs"), std::string::npos);
}

}  // namespace
}  // namespace fabric_chaos::lab
