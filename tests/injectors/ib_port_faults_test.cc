// ib_link_down, ib_link_flap and ib_mad_loss against a fake process table: the console commands
// each sends to the ibsim of the target's namespace, and what each refuses.

#include "injectors/ib/ib_port_faults.h"

#include <gtest/gtest.h>

#include "tests/fakes/fake_daemon_control.h"

namespace fabric_chaos::injectors {
namespace {

using core::StatusCode;
using fakes::FakeDaemonControl;

class IbPortFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    daemons_.addNamespace("fcib-subnet", 7);
    daemons_.addNamespace("fcib2-subnet", 9);
    sys::ProcessInfo sim;
    sim.comm = "ibsim";
    sim.netns_inode = 9;
    daemons_.addProcess(sim);  // another lab's simulator
    sim.netns_inode = 7;
    ibsim_ = daemons_.addProcess(sim);
  }
  std::string console() const { return "/proc/" + std::to_string(ibsim_) + "/fd/0"; }

  FakeDaemonControl daemons_;
  pid_t ibsim_ = 0;
};

TEST_F(IbPortFaultTest, LinkKindsUnlinkAndRelinkThePortInItsOwnLabsSimulator) {
  for (IbPortFaultKind kind : {IbPortFaultKind::kLinkDown, IbPortFaultKind::kLinkFlap}) {
    IbPortFault injector(kind, &daemons_);
    const Fault fault{injector.spec().kind, IbPortTarget{"l0", 3, "fcib-subnet"}, json::object()};
    auto prior = injector.capture(fault);
    ASSERT_TRUE(prior.isOk()) << prior.status().toString();
    EXPECT_EQ((*prior)["simulator_pid"], ibsim_);
    ASSERT_TRUE(injector.apply(fault).isOk());
    ASSERT_TRUE(injector.revert(fault, *prior).isOk());
  }
  const auto written = daemons_.written();
  ASSERT_EQ(written.size(), 4u);
  for (const auto& w : written) EXPECT_EQ(w.path, console());
  EXPECT_EQ(written[0].line, "Unlink \"l0\"[3]");
  EXPECT_EQ(written[1].line, "ReLink \"l0\"[3]");
  EXPECT_EQ(written[2].line, "Unlink \"l0\"[3]");
  EXPECT_EQ(written[3].line, "ReLink \"l0\"[3]");
}

TEST_F(IbPortFaultTest, MadLossSetsThePortsErrorRateAndRevertClearsIt) {
  IbPortFault injector(IbPortFaultKind::kMadLoss, &daemons_);
  const Fault fault{"ib_mad_loss", IbPortTarget{"s1", 2, "fcib-subnet"}, {{"percent", 20}}};
  ASSERT_TRUE(injector.validate(fault.params).isOk());
  ASSERT_TRUE(injector.apply(fault).isOk());
  ASSERT_TRUE(injector.revert(fault, json::object()).isOk());
  const auto written = daemons_.written();
  ASSERT_EQ(written.size(), 2u);
  EXPECT_EQ(written[0].line, "Error \"s1\"[2] 20");
  EXPECT_EQ(written[1].line, "Error \"s1\"[2] 0");
  EXPECT_FALSE(injector.validate(json::object()).isOk());
  EXPECT_FALSE(injector.validate({{"percent", 0}}).isOk());
  EXPECT_FALSE(injector.validate({{"percent", 101}}).isOk());
}

TEST_F(IbPortFaultTest, RefusesWhatItCannotReachSayingWhy) {
  IbPortFault injector(IbPortFaultKind::kLinkDown, &daemons_);
  auto down = injector.capture(Fault{"ib_link_down", IbPortTarget{"l0", 1, "fcib-gone"}, {}});
  ASSERT_FALSE(down.isOk());
  EXPECT_EQ(down.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(down.status().message().find("is the IB lab up?"), std::string::npos);
  // A namespace without a simulator.
  daemons_.addNamespace("fcib3-subnet", 11);
  auto no_sim = injector.apply(Fault{"ib_link_down", IbPortTarget{"l0", 1, "fcib3-subnet"}, {}});
  EXPECT_EQ(no_sim.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(no_sim.message(), "no ibsim runs in namespace fcib3-subnet: is the IB lab up?");
  // ... where a revert has nothing left to restore.
  EXPECT_TRUE(
      injector.revert(Fault{"ib_link_down", IbPortTarget{"l0", 1, "fcib3-subnet"}, {}}, {}).isOk());
  auto real = injector.apply(Fault{"ib_link_down", IbPortTarget{"l0", 1, ""}, {}});
  EXPECT_EQ(real.code(), StatusCode::kNotSupported);
  EXPECT_NE(real.message().find("PortInfo Set MADs"), std::string::npos);
  auto wrong = injector.apply(Fault{"ib_link_down", InterfaceTarget{"", "eth0"}, {}});
  EXPECT_EQ(wrong.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(wrong.message(), "ib_link_down acts on an ib_port, not on target type interface");
  EXPECT_TRUE(daemons_.written().empty());
}

TEST_F(IbPortFaultTest, AConsoleWithoutAReaderIsReported) {
  IbPortFault injector(IbPortFaultKind::kLinkDown, &daemons_);
  daemons_.failOn(1, core::Status(StatusCode::kUnavailable, "/proc/1/fd/0 has no reader"));
  const auto status =
      injector.apply(Fault{"ib_link_down", IbPortTarget{"l0", 1, "fcib-subnet"}, {}});
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace fabric_chaos::injectors
