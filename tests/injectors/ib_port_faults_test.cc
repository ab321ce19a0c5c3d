// ib_link_down, ib_link_flap and ib_mad_loss against a fake process table: the console commands
// each sends to the ibsim of the target's namespace, and what each refuses; on a real subnet,
// against a fake ib-port command: the query, disable and enable each sends, and what it refuses.

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
  EXPECT_NE(real.message().find("runs this program's ib-port command"), std::string::npos);
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

// What a real subnet's ib-port command is asked, and what it answers.
class FakeIbPortCommand : public sys::IbPortCommand {
 public:
  struct Call {
    std::string node;
    int port;
    sys::IbPortCommandAction action;
  };
  core::Result<json> run(const std::string& node, int port,
                         sys::IbPortCommandAction action) override {
    calls.push_back({node, port, action});
    if (!fail.isOk()) return fail;
    // A channel adapter's name means its switch's end: h3 is cabled to l1 port 2.
    const std::string sw = node == "h3" ? "l1" : node;
    const int number = node == "h3" ? 2 : port;
    const char* after = action == sys::IbPortCommandAction::kDisable  ? "disabled"
                        : action == sys::IbPortCommandAction::kEnable ? "polling"
                                                                      : before.c_str();
    return json{{"switch", sw},     {"guid", "0x0000000000200003"},
                {"port", number},   {"route", "0,1,4"},
                {"before", before}, {"after", after}};
  }
  std::vector<Call> calls;
  std::string before = "link-up";
  core::Status fail = core::Status::ok();
};

TEST_F(IbPortFaultTest, OnARealSubnetTheSwitchPortIsDisabledAndEnabledAgain) {
  FakeIbPortCommand ports;
  for (IbPortFaultKind kind : {IbPortFaultKind::kLinkDown, IbPortFaultKind::kLinkFlap}) {
    ports.calls.clear();
    IbPortFault injector(kind, &daemons_, &ports);
    EXPECT_NE(injector.info().backend.find("PortInfo Set"), std::string::npos);
    const Fault fault{injector.spec().kind, IbPortTarget{"h3", 1, ""}, json::object()};
    auto prior = injector.capture(fault);
    ASSERT_TRUE(prior.isOk()) << prior.status().toString();
    EXPECT_EQ(*prior, (json{{"switch", "l1"}, {"port", 2}, {"before", "link-up"}}));
    ASSERT_TRUE(injector.apply(fault).isOk());
    ASSERT_TRUE(injector.revert(fault, *prior).isOk());
    ASSERT_EQ(ports.calls.size(), 3u);
    EXPECT_EQ(ports.calls[0].action, sys::IbPortCommandAction::kQuery);
    EXPECT_EQ(ports.calls[1].action, sys::IbPortCommandAction::kDisable);
    EXPECT_EQ(ports.calls[1].node, "h3");
    // The revert names the switch end the capture found: h3 cannot be found with its cable down.
    EXPECT_EQ(ports.calls[2].action, sys::IbPortCommandAction::kEnable);
    EXPECT_EQ(ports.calls[2].node, "l1");
    EXPECT_EQ(ports.calls[2].port, 2);
  }
  EXPECT_TRUE(daemons_.written().empty()) << "no simulator console on a real subnet";

  // Observed: the switch port's physical state now.
  IbPortFault injector(IbPortFaultKind::kLinkDown, &daemons_, &ports);
  const Fault fault{"ib_link_down", IbPortTarget{"s1", 7, ""}, json::object()};
  auto seen = injector.observe(fault);
  ASSERT_TRUE(seen.isOk());
  EXPECT_EQ(*seen, (json{{"switch", "s1"}, {"port", 7}, {"physical_state", "link-up"}}));

  // A port that was disabled before the fault stays so: no enable.
  ports.calls.clear();
  ASSERT_TRUE(
      injector.revert(fault, {{"switch", "s1"}, {"port", 7}, {"before", "disabled"}}).isOk());
  EXPECT_TRUE(ports.calls.empty());
}

TEST_F(IbPortFaultTest, OnARealSubnetRefusalsAreTheCommandsAndMadLossIsNotSupported) {
  FakeIbPortCommand ports;
  IbPortFault injector(IbPortFaultKind::kLinkDown, &daemons_, &ports);
  ports.fail = core::Status(StatusCode::kFailedPrecondition,
                            "l1 port 2: l1 port 2 is the cable of the node sending the MADs");
  const auto own = injector.apply(Fault{"ib_link_down", IbPortTarget{"h3", 1, ""}, {}});
  EXPECT_EQ(own.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(own.message().find("the node sending the MADs"), std::string::npos);

  IbPortFault loss(IbPortFaultKind::kMadLoss, &daemons_, &ports);
  EXPECT_EQ(loss.info().backend, "ibsim console (the IB lab)");
  const auto real = loss.apply(Fault{"ib_mad_loss", IbPortTarget{"l0", 1, ""}, {{"percent", 10}}});
  EXPECT_EQ(real.code(), StatusCode::kNotSupported);
  EXPECT_NE(real.message().find("real switches and HCAs have no such setting"), std::string::npos);
  ports.calls.clear();
  EXPECT_FALSE(loss.capture(Fault{"ib_mad_loss", IbPortTarget{"l0", 1, ""}, {}}).isOk());
  EXPECT_TRUE(ports.calls.empty());
}

}  // namespace
}  // namespace fabric_chaos::injectors
