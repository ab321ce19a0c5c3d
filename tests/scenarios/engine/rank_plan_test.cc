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

Fabric ibFabric() {
  Fabric fabric;
  fabric.name = "ib-lab";
  fabric.kind = "ib";
  for (int i = 0; i < 3; ++i) {
    Host host;
    host.name = "h" + std::to_string(i);
    host.netns = "fcib-subnet";
    host.nics.push_back({"port1", ""});
    fabric.hosts.push_back(host);
    Link link;
    link.id = host.name + "-l0";
    link.host = host.name;
    link.nic = "port1";
    link.switch_name = "l0";
    link.port = std::to_string(i + 1);
    link.labels = {{"port_guid", "0x000000000010000" + std::to_string(2 * i + 1)}};
    fabric.links.push_back(link);
  }
  fabric.ib = IbFabric{
      {{"sm0", "h0", 14, "0x0000000000100001", ""}},
      IbSimulator{"fcib-subnet", "/run/fc/ib/ib-lab/console", "/umad2sim.so", "/run/fc/ib/ib-lab"}};
  return fabric;
}

TEST(RankPlan, AnInfinibandFabricRunsTheIbProbeAttachedAtEachHost) {
  Scenario scenario = scenarioWith({});
  scenario.workload.transport = "tcp";  // the default: on an IB fabric the probe is the workload
  auto ranks = planRanks(scenario, ibFabric(), 17005);
  ASSERT_TRUE(ranks.isOk()) << ranks.status().toString();
  ASSERT_EQ(ranks->size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const agent::RankSpec& spec = (*ranks)[static_cast<size_t>(i)].spec;
    EXPECT_EQ(spec.transport, "ib_probe");
    EXPECT_EQ(spec.netns, "fcib-subnet");
    EXPECT_EQ(spec.ib_node, "h" + std::to_string(i));
    EXPECT_EQ(spec.ib_preload, "/umad2sim.so");
    EXPECT_EQ(spec.ib_dir, "/run/fc/ib/ib-lab");
    EXPECT_TRUE((*ranks)[static_cast<size_t>(i)].agent.isLocal());
  }
  // Each asks for a path to the next host's port, round the ring.
  EXPECT_EQ((*ranks)[0].spec.next_addr, "0x0000000000100003");
  EXPECT_EQ((*ranks)[2].spec.next_addr, "0x0000000000100001");

  scenario.workload.transport = "verbs";
  auto verbs = planRanks(scenario, ibFabric(), 17005);
  ASSERT_FALSE(verbs.isOk());
  EXPECT_THAT(verbs.status().message(), HasSubstr("its workload is the IB probe"));
  scenario.workload.transport = "ib_probe";
  auto on_ethernet = planRanks(scenario, threeHostFabric(), 17005);
  ASSERT_FALSE(on_ethernet.isOk());
  EXPECT_THAT(on_ethernet.status().message(), HasSubstr("fabric vm-lab is not one"));
}

TEST(RankPlan, AScenarioWithAVerbsStepStartsItsRanksWithTheShimLoaded) {
  Scenario scenario = scenarioWith({});
  FaultStep flap;
  flap.kind = "link_flap";
  flap.target.host = "vm0";
  scenario.steps.push_back(flap);
  EXPECT_FALSE(armsVerbsShim(scenario));
  auto plain = planRanks(scenario, threeHostFabric(), 17001);
  ASSERT_TRUE(plain.isOk()) << plain.status().toString();
  for (const PlannedRank& r : *plain) EXPECT_FALSE(r.spec.verbs_shim);
  FaultStep cqe;
  cqe.kind = "verbs_cqe_error";
  cqe.target.rank = 1;
  scenario.steps.push_back(cqe);
  EXPECT_TRUE(armsVerbsShim(scenario));
  auto shimmed = planRanks(scenario, threeHostFabric(), 17001);
  ASSERT_TRUE(shimmed.isOk()) << shimmed.status().toString();
  ASSERT_EQ(shimmed->size(), 3u);
  for (const PlannedRank& r : *shimmed) EXPECT_TRUE(r.spec.verbs_shim) << r.spec.rank;
}

// External workloads: every rank meets at rank 0's address, and pytorch-ddp is the shipped script
// under the scenario's interpreter with gloo on the rank's own fabric interface.
TEST(RankPlan, AnExternalWorkloadRendezvousesAtRankZero) {
  Scenario scenario = scenarioWith({"vm2", "vm0"});
  scenario.workload.kind = WorkloadKind::kPytorchDdp;
  scenario.workload.exec.command = {"--timeout-s", "20"};
  scenario.workload.exec.env = {{"NCCL_DEBUG", "WARN"}};
  scenario.workload.exec.master_port = 29600;
  auto ranks = planRanks(scenario, threeHostFabric(), 17005);
  ASSERT_TRUE(ranks.isOk()) << ranks.status().toString();
  ASSERT_EQ(ranks->size(), 2u);
  for (const PlannedRank& r : *ranks) {
    EXPECT_EQ(r.spec.transport, "exec");
    EXPECT_EQ(r.spec.exec.master_addr, "10.0.0.3") << "vm2 is rank 0";
    EXPECT_EQ(r.spec.exec.master_port, 29600);
    EXPECT_EQ(r.spec.exec.ifname, "eth1");
    EXPECT_EQ(r.spec.exec.script, "pytorch-ddp");
    EXPECT_EQ(r.spec.exec.command,
              (std::vector<std::string>{"/usr/bin/python3", "{script}", "--timeout-s", "20"}));
    EXPECT_EQ(r.spec.exec.env,
              (std::vector<std::string>{"GLOO_SOCKET_IFNAME=eth1", "NCCL_DEBUG=WARN"}));
    EXPECT_TRUE(r.spec.exec.reports_steps);
  }
  EXPECT_EQ((*ranks)[1].agent.name, "http://127.0.0.1:7100");

  // An exec job whose steps only rank 0 prints; the scenario's GLOO_SOCKET_IFNAME is its own.
  scenario.workload.kind = WorkloadKind::kExec;
  scenario.workload.exec.command = {"all_reduce_perf", "-N", "0"};
  scenario.workload.exec.parser.format = workload::StepFormat::kNcclTests;
  scenario.workload.exec.every_rank_reports = false;
  ranks = planRanks(scenario, threeHostFabric(), 17005);
  ASSERT_TRUE(ranks.isOk());
  EXPECT_TRUE((*ranks)[0].spec.exec.reports_steps);
  EXPECT_FALSE((*ranks)[1].spec.exec.reports_steps);
  EXPECT_EQ((*ranks)[0].spec.exec.script, "");
  EXPECT_EQ((*ranks)[0].spec.exec.command,
            (std::vector<std::string>{"all_reduce_perf", "-N", "0"}));
  EXPECT_EQ((*ranks)[0].spec.exec.parser.format, workload::StepFormat::kNcclTests);
  EXPECT_EQ((*ranks)[0].spec.exec.env, (std::vector<std::string>{"NCCL_DEBUG=WARN"}));
}

}  // namespace
}  // namespace fabric_chaos::scenarios
