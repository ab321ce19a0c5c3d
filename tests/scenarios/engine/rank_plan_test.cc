// planRanks: which ranks a run starts and through which agent, from the scenario and the fabric
// alone. The ring order follows the scenario's host list, each rank's next peer wraps round, the
// VM lab's ranks go to their own hosts' agents, and each refusal names what is wrong.

#include "scenarios/engine/rank_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace fabric_chaos::scenarios {
namespace {

using ::testing::HasSubstr;

Fabric threeHostFabric() {
  Fabric fabric;
  fabric.name = "vm-lab";
  fabric.kind = "vm";
  for (int i = 0; i < 3; ++i) {
    Host host;
    host.name = "vm" + std::to_string(i);
    host.agent = "http://127.0.0.1:710" + std::to_string(i);
    host.agent_token_file = "/state/vm" + std::to_string(i) + ".token";
    host.nics.push_back({"eth1", "10.0.0." + std::to_string(i + 1)});
    fabric.hosts.push_back(host);
  }
  return fabric;
}

Scenario scenarioWith(std::vector<std::string> hosts) {
  Scenario scenario;
  scenario.workload.hosts = std::move(hosts);
  scenario.workload.message_bytes = 65536;
  scenario.workload.transport = "verbs";
  scenario.max_duration_ms = 30000;
  return scenario;
}

TEST(RankPlan, EveryHostOfTheFabricInOrderWhenTheScenarioNamesNone) {
  auto ranks = planRanks(scenarioWith({}), threeHostFabric(), 17005);
  ASSERT_TRUE(ranks.isOk()) << ranks.status().toString();
  ASSERT_EQ(ranks->size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const PlannedRank& r = (*ranks)[static_cast<size_t>(i)];
    EXPECT_EQ(r.spec.rank, i);
    EXPECT_EQ(r.spec.world, 3);
    EXPECT_EQ(r.spec.listen_addr, "10.0.0." + std::to_string(i + 1));
    EXPECT_EQ(r.spec.next_addr, "10.0.0." + std::to_string((i + 1) % 3 + 1));
    EXPECT_EQ(r.spec.port, 17005);
    EXPECT_EQ(r.spec.next_port, 17005);
    EXPECT_EQ(r.spec.message_bytes, 65536);
    EXPECT_EQ(r.spec.transport, "verbs");
    // The ranks outlive a lost engine by a minute at most.
    EXPECT_EQ(r.spec.max_duration_ms, 90000);
    EXPECT_EQ(r.agent.name, "http://127.0.0.1:710" + std::to_string(i));
    EXPECT_EQ(r.agent.token_file, "/state/vm" + std::to_string(i) + ".token");
  }
}

TEST(RankPlan, TheScenarioHostListSetsTheRingOrder) {
  auto ranks = planRanks(scenarioWith({"vm2", "vm0"}), threeHostFabric(), 17000);
  ASSERT_TRUE(ranks.isOk()) << ranks.status().toString();
  ASSERT_EQ(ranks->size(), 2u);
  EXPECT_EQ((*ranks)[0].spec.listen_addr, "10.0.0.3");
  EXPECT_EQ((*ranks)[0].spec.next_addr, "10.0.0.1");
  EXPECT_EQ((*ranks)[1].spec.listen_addr, "10.0.0.1");
  EXPECT_EQ((*ranks)[1].spec.next_addr, "10.0.0.3");
  EXPECT_EQ((*ranks)[1].agent.name, "http://127.0.0.1:7100");
}

TEST(RankPlan, RefusesAHostTheFabricLacks) {
  auto ranks = planRanks(scenarioWith({"vm0", "vm9"}), threeHostFabric(), 17000);
  ASSERT_FALSE(ranks.isOk());
  EXPECT_EQ(ranks.status().code(), core::StatusCode::kUnprocessable);
  EXPECT_THAT(ranks.status().message(), HasSubstr("workload host vm9 is not in fabric vm-lab"));
}

TEST(RankPlan, RefusesFewerThanTwoHosts) {
  auto ranks = planRanks(scenarioWith({"vm1"}), threeHostFabric(), 17000);
  ASSERT_FALSE(ranks.isOk());
  EXPECT_EQ(ranks.status().code(), core::StatusCode::kUnprocessable);
  EXPECT_THAT(ranks.status().message(), HasSubstr("at least 2 hosts"));
}

TEST(RankPlan, NamesTheHostWithoutANicAddressEvenWhenItIsOnlyTheNextPeer) {
  Fabric fabric = threeHostFabric();
  fabric.hosts[1].nics.clear();
  auto ranks = planRanks(scenarioWith({"vm0", "vm1"}), fabric, 17000);
  ASSERT_FALSE(ranks.isOk());
  EXPECT_EQ(ranks.status().code(), core::StatusCode::kUnprocessable);
  EXPECT_THAT(ranks.status().message(), HasSubstr("host vm1 has no NIC address"));
}

}  // namespace
}  // namespace fabric_chaos::scenarios
