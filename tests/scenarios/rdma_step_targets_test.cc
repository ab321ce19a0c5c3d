// The RDMA device kinds' step targets: a port of a named device on a workload rank's or a host's
// machine, acted on by that host's own agent; and the refusals, for RDMA kinds aimed at links,
// processes or traffic, without a device, and for other kinds given a device. Pure.

#include "scenarios/rdma_step_targets.h"

#include <gtest/gtest.h>

#include "scenarios/engine/agent_directory.h"
#include "scenarios/step_targets.h"
#include "tests/scenarios/vm_lab_fabric.h"

namespace fabric_chaos::scenarios {
namespace {

using core::StatusCode;
using injectors::RdmaPortTarget;

TargetSelector onRank(int rank, const std::string& device) {
  TargetSelector t;
  t.rank = rank;
  t.rdma_device = device;
  return t;
}

TEST(RdmaStepTargets, ARanksDeviceIsOnItsWorkloadHostActedOnByThatHostsAgent) {
  const Fabric fabric = vmFabric();
  TargetSelector selector = onRank(1, "rxe0");
  selector.gid_index = 1;
  auto targets = resolveStepTargets(step("rdma_gid_change", selector), fabric);
  ASSERT_TRUE(targets.isOk()) << targets.status().toString();
  ASSERT_EQ(targets->size(), 1u);
  EXPECT_EQ((*targets)[0].host, "vm1");
  EXPECT_EQ((*targets)[0].side, LinkSide::kHost);
  EXPECT_EQ((*targets)[0].target, injectors::Target(RdmaPortTarget{"rxe0", 1, 1}));
  EXPECT_EQ(agentForTarget(fabric, (*targets)[0]).name, "http://127.0.0.1:7101");
  // workload.hosts lays the ranks out; rdma_port and gid_index default to 1 and 0.
  auto listed = resolveStepTargets(step("rdma_port_down", onRank(0, "mlx5_1")), fabric, {"vm2"});
  ASSERT_TRUE(listed.isOk()) << listed.status().toString();
  EXPECT_EQ((*listed)[0].host, "vm2");
  EXPECT_EQ((*listed)[0].target, injectors::Target(RdmaPortTarget{"mlx5_1", 1, 0}));
  auto beyond = resolveStepTargets(step("rdma_port_down", onRank(1, "rxe0")), fabric, {"vm2"});
  EXPECT_EQ(beyond.status().code(), StatusCode::kUnprocessable);
  EXPECT_EQ(beyond.status().message(), "rank 1: the workload has 1 rank (0 to 0)");
}

TEST(RdmaStepTargets, AHostNamesTheMachineAndThePortIsChosen) {
  const Fabric fabric = vmFabric();
  TargetSelector selector;
  selector.host = "vm2";
  selector.rdma_device = "rxe0";
  selector.rdma_port = 2;
  auto targets = resolveStepTargets(step("rdma_mtu_change", selector), fabric);
  ASSERT_TRUE(targets.isOk()) << targets.status().toString();
  EXPECT_EQ((*targets)[0].host, "vm2");
  EXPECT_EQ((*targets)[0].target, injectors::Target(RdmaPortTarget{"rxe0", 2, 0}));
  selector.host = "vm9";
  EXPECT_EQ(resolveStepTargets(step("rdma_mtu_change", selector), fabric).status().code(),
            StatusCode::kUnprocessable);
}

TEST(RdmaStepTargets, SelectorsThatDoNotNameAnRdmaPortAreRefusedBothWays) {
  const Fabric fabric = vmFabric();
  TargetSelector no_device;
  no_device.rank = 1;
  auto missing = resolveStepTargets(step("rdma_device_remove", no_device), fabric);
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(missing.status().message().rfind("rdma_device: required: rdma_device_remove acts on "
                                             "one RDMA device's port",
                                             0),
            0u)
      << missing.status().message();
  TargetSelector by_link;
  by_link.link = "vm0-sw0";
  auto link = resolveStepTargets(step("rdma_port_down", by_link), fabric);
  EXPECT_EQ(link.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(link.status().message().find("rdma_port_down acts on an RDMA port: select a workload "
                                         "rank or a host"),
            std::string::npos)
      << link.status().message();
  TargetSelector with_process = onRank(0, "rxe0");
  with_process.rank.reset();
  with_process.host = "vm0";
  with_process.process = "ib_write_bw";
  EXPECT_EQ(resolveStepTargets(step("rdma_port_down", with_process), fabric).status().message(),
            "process: rdma_port_down acts on an RDMA port, not on processes");
  // A device on a kind that does not act on RDMA ports, the verbs kinds included.
  for (const char* kind : {"link_flap", "verbs_qp_error"}) {
    auto other = resolveStepTargets(step(kind, onRank(0, "rxe0")), fabric);
    EXPECT_EQ(other.status().code(), StatusCode::kInvalidArgument) << kind;
    EXPECT_EQ(other.status().message(),
              "rdma_device: only the RDMA device kinds (rdma_*) act on an RDMA port; " +
                  std::string(kind) + " does not");
  }
}

}  // namespace
}  // namespace fabric_chaos::scenarios
