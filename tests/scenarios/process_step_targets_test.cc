// The verbs kinds' step targets: a workload rank on its host, or a host's processes by name or
// all of them, each acted on by that host's agent; and the refusals, for process kinds aimed
// elsewhere and for other kinds given a rank or a process name. Pure.

#include "scenarios/process_step_targets.h"

#include <gtest/gtest.h>

#include "scenarios/engine/agent_directory.h"
#include "scenarios/step_targets.h"
#include "tests/scenarios/vm_lab_fabric.h"

namespace fabric_chaos::scenarios {
namespace {

using core::StatusCode;
using injectors::ProcessTarget;

TargetSelector rank(int r) {
  TargetSelector t;
  t.rank = r;
  return t;
}

TargetSelector host(const std::string& name, const std::string& process = "") {
  TargetSelector t;
  t.host = name;
  t.process = process;
  return t;
}

TEST(ProcessStepTargets, ARankIsItsProcessOnItsWorkloadHostActedOnByThatHostsAgent) {
  const Fabric fabric = vmFabric();
  auto targets = resolveStepTargets(step("verbs_cqe_error", rank(1)), fabric);
  ASSERT_TRUE(targets.isOk()) << targets.status().toString();
  ASSERT_EQ(targets->size(), 1u);
  EXPECT_EQ((*targets)[0].host, "vm1");
  ProcessTarget expected;
  expected.rank = 1;
  EXPECT_EQ((*targets)[0].target, injectors::Target(expected));
  EXPECT_EQ(agentForTarget(fabric, (*targets)[0]).name, "http://127.0.0.1:7101");
  // With workload.hosts, rank i runs on the i-th of them.
  auto listed = resolveStepTargets(step("verbs_qp_error", rank(0)), fabric, {"vm2", "vm0"});
  ASSERT_TRUE(listed.isOk()) << listed.status().toString();
  EXPECT_EQ((*listed)[0].host, "vm2");
  auto beyond = resolveStepTargets(step("verbs_qp_error", rank(2)), fabric, {"vm2", "vm0"});
  ASSERT_FALSE(beyond.isOk());
  EXPECT_EQ(beyond.status().code(), StatusCode::kUnprocessable);
  EXPECT_EQ(beyond.status().message(), "rank 2: the workload has 2 ranks (0 to 1)");
}

TEST(ProcessStepTargets, AHostSelectsItsProcessesByNameOrEveryShimLoadedOne) {
  const Fabric fabric = vmFabric();
  auto named = resolveStepTargets(step("verbs_post_fail", host("vm2", "ib_write_bw")), fabric);
  ASSERT_TRUE(named.isOk()) << named.status().toString();
  ProcessTarget by_name;
  by_name.name = "ib_write_bw";
  EXPECT_EQ((*named)[0].target, injectors::Target(by_name));
  EXPECT_EQ((*named)[0].host, "vm2");
  EXPECT_EQ((*named)[0].side, LinkSide::kHost);
  auto every = resolveStepTargets(step("verbs_completion_delay", host("vm0")), fabric);
  ASSERT_TRUE(every.isOk()) << every.status().toString();
  EXPECT_TRUE(injectors::isEveryProcess(std::get<ProcessTarget>((*every)[0].target)));
  auto unknown = resolveStepTargets(step("verbs_post_fail", host("vm9")), fabric);
  EXPECT_EQ(unknown.status().code(), StatusCode::kUnprocessable);
}

TEST(ProcessStepTargets, SelectorsThatDoNotNameProcessesAreRefusedBothWays) {
  const Fabric fabric = vmFabric();
  TargetSelector by_link;
  by_link.link = "vm0-sw0";
  auto link = resolveStepTargets(step("verbs_cqe_error", by_link), fabric);
  ASSERT_FALSE(link.isOk());
  EXPECT_EQ(link.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(link.status().message().find("verbs_cqe_error acts on processes: select a workload "
                                         "rank"),
            std::string::npos)
      << link.status().message();
  auto flap_rank = resolveStepTargets(step("link_flap", rank(0)), fabric);
  EXPECT_EQ(flap_rank.status().message(),
            "rank: only kinds that act on processes (verbs_*) or RDMA ports (rdma_*) take a rank; "
            "link_flap does not");
  auto flap_process = resolveStepTargets(step("link_flap", host("vm0", "nccl")), fabric);
  EXPECT_EQ(flap_process.status().code(), StatusCode::kInvalidArgument);
  TargetSelector with_sources = host("vm0");
  with_sources.sources = {"vm1"};
  EXPECT_EQ(resolveStepTargets(step("verbs_cqe_error", with_sources), fabric).status().message(),
            "sources: verbs_cqe_error acts on processes and takes no traffic endpoints");
}

}  // namespace
}  // namespace fabric_chaos::scenarios
