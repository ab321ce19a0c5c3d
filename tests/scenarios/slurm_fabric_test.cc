// The fabric's "slurm" section and a workload's "launcher"/"slurm" fields: their codecs, what
// they refuse (naming the field), and the scenario that needs a cluster on a fabric without one.
// Pure.

#include "scenarios/slurm_fabric.h"

#include <gtest/gtest.h>

#include "scenarios/model.h"
#include "scenarios/topology.h"
#include "scenarios/validate.h"

namespace fabric_chaos::scenarios {
namespace {

using nlohmann::json;

json fabricWith(json slurm) {
  json fabric = {{"name", "netns-lab"},
                 {"kind", "netns"},
                 {"hosts",
                  {{{"name", "h0"}, {"netns", "fcl-h0"}, {"nics", {{{"name", "eth0"}}}}},
                   {{"name", "h1"}, {"netns", "fcl-h1"}, {"nics", {{{"name", "eth0"}}}}}}}};
  if (!slurm.is_null()) fabric["slurm"] = std::move(slurm);
  return fabric;
}

TEST(SlurmFabricTest, RoundTripsAndMapsHostsToNodes) {
  const json slurm = {{"conf", "/etc/slurm/slurm.conf"},
                      {"submit_netns", "fcl-slurmctl"},
                      {"partition", "gpu"},
                      {"binary", "/usr/bin/fabric-chaos"},
                      {"nodes", {{"h1", "gpu018"}}}};
  auto fabric = fabricFromJson(fabricWith(slurm));
  ASSERT_TRUE(fabric.isOk()) << fabric.status().toString();
  ASSERT_TRUE(fabric->slurm.has_value());
  EXPECT_EQ(fabric->slurm->nodeOf("h0"), "h0");
  EXPECT_EQ(fabric->slurm->nodeOf("h1"), "gpu018");
  EXPECT_EQ(toJson(*fabric)["slurm"], slurm);
  auto again = fabricFromJson(toJson(*fabric));
  ASSERT_TRUE(again.isOk());
  EXPECT_EQ(again->slurm, fabric->slurm);
  // Every field is optional: Slurm's own defaults.
  auto bare = fabricFromJson(fabricWith(json::object()));
  ASSERT_TRUE(bare.isOk()) << bare.status().toString();
  EXPECT_EQ(bare->slurm, SlurmCluster{});
  EXPECT_FALSE(fabricFromJson(fabricWith(nullptr))->slurm.has_value());
}

TEST(SlurmFabricTest, RefusesWhatSrunWouldMisreadNamingTheField) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"conf", "slurm.conf"}}, "slurm.conf"},
      {{{"binary", "fabric-chaos"}}, "slurm.binary"},
      {{{"submit_netns", "../x"}}, "slurm.submit_netns"},
      {{{"partition", "gpu q"}}, "slurm.partition"},
      {{{"nodes", {{"h0", "node 1"}}}}, "slurm.nodes.h0"},
      {{{"nodes", {{"h9", "node9"}}}}, "slurm.nodes.h9"},
      {{{"nodes", json::array()}}, "slurm.nodes"},
      {{{"queue", "gpu"}}, "slurm.queue"},
  };
  for (const auto& [slurm, field] : cases) {
    auto parsed = fabricFromJson(fabricWith(slurm));
    ASSERT_FALSE(parsed.isOk()) << slurm.dump();
    EXPECT_NE(parsed.status().message().find(field), std::string::npos)
        << slurm.dump() << ": " << parsed.status().message();
  }
}

json ddpScenario(json workload) {
  return {{"version", 1},
          {"name", "ddp"},
          {"workload", std::move(workload)},
          {"steps", json::array()},
          {"baseline_ms", 1000}};
}

TEST(WorkloadLauncherTest, ParsesRoundTripsAndRefuses) {
  auto parsed = parseScenario(ddpScenario({{"kind", "pytorch-ddp"},
                                           {"launcher", "slurm"},
                                           {"slurm",
                                            {{"partition", "gpu"},
                                             {"reservation", "chaos"},
                                             {"wait_s", 45},
                                             {"srun_args", {"--time=5"}}}}}));
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  const ExecWorkloadSpec& exec = parsed->workload.exec;
  EXPECT_EQ(exec.launcher, WorkloadLauncher::kSlurm);
  EXPECT_EQ(exec.slurm.partition, "gpu");
  EXPECT_EQ(exec.slurm.reservation, "chaos");
  EXPECT_EQ(exec.slurm.wait_s, 45);
  EXPECT_EQ(exec.slurm.srun_args, std::vector<std::string>{"--time=5"});
  auto again = parseScenario(toJson(*parsed));
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ(again->workload.exec.launcher, WorkloadLauncher::kSlurm);
  EXPECT_EQ(again->workload.exec.slurm, exec.slurm);
  // The default launcher is the agents, and it is not written out.
  auto by_agents = parseScenario(ddpScenario({{"kind", "pytorch-ddp"}}));
  ASSERT_TRUE(by_agents.isOk());
  EXPECT_EQ(by_agents->workload.exec.launcher, WorkloadLauncher::kAgents);
  EXPECT_FALSE(toJson(*by_agents)["workload"].contains("launcher"));

  const std::vector<std::pair<json, std::string>> refused = {
      {{{"kind", "pytorch-ddp"}, {"launcher", "mpirun"}}, "workload.launcher"},
      {{{"kind", "pytorch-ddp"}, {"slurm", {{"partition", "gpu"}}}}, "workload.slurm"},
      {{{"kind", "pytorch-ddp"}, {"launcher", "slurm"}, {"slurm", {{"wait_s", 0}}}},
       "workload.slurm.wait_s"},
      {{{"kind", "pytorch-ddp"}, {"launcher", "slurm"}, {"slurm", {{"partition", "a;b"}}}},
       "workload.slurm.partition"},
      {{{"kind", "pytorch-ddp"}, {"launcher", "slurm"}, {"slurm", {{"srun_args", {"time=5"}}}}},
       "workload.slurm.srun_args[0]"},
      {{{"kind", "pytorch-ddp"}, {"launcher", "slurm"}, {"slurm", {{"nodes", 4}}}},
       "workload.slurm.nodes"},
      {{{"kind", "ring"}, {"launcher", "slurm"}}, "workload.launcher"},
  };
  for (const auto& [workload, field] : refused) {
    auto bad = parseScenario(ddpScenario(workload));
    ASSERT_FALSE(bad.isOk()) << workload.dump();
    EXPECT_NE(bad.status().message().find(field), std::string::npos)
        << workload.dump() << ": " << bad.status().message();
  }
}

TEST(WorkloadLauncherTest, ASlurmLaunchNeedsAFabricWithACluster) {
  auto scenario = parseScenario(ddpScenario({{"kind", "pytorch-ddp"}, {"launcher", "slurm"}}));
  ASSERT_TRUE(scenario.isOk());
  KindCatalog catalog;
  auto without = fabricFromJson(fabricWith(nullptr));
  ASSERT_TRUE(without.isOk());
  const core::Status refused = validateForFabric(*scenario, *without, catalog);
  EXPECT_EQ(refused.code(), core::StatusCode::kUnprocessable);
  EXPECT_NE(refused.message().find("no Slurm cluster"), std::string::npos) << refused.message();
  auto with = fabricFromJson(fabricWith(json::object()));
  ASSERT_TRUE(with.isOk());
  EXPECT_TRUE(validateForFabric(*scenario, *with, catalog).isOk());
}

}  // namespace
}  // namespace fabric_chaos::scenarios
