// sm_failover against a fake process table (tests/fakes/fake_daemon_control.h): which OpenSM is
// the target's, what capture journals, the signal apply sends, the restart revert makes from the
// journal alone, port_down through the simulator's console, and every refusal.

#include "injectors/ib/sm_failover.h"

#include <gtest/gtest.h>
#include <signal.h>

#include "tests/fakes/fake_daemon_control.h"

namespace fabric_chaos::injectors {
namespace {

using core::StatusCode;
using fakes::FakeDaemonControl;

constexpr uint64_t kLabInode = 7;
constexpr uint64_t kHostInode = 1;
constexpr uint64_t kOtherLabInode = 9;

sys::ProcessInfo openSm(uint64_t inode, const std::string& sim_host,
                        std::vector<std::string> argv = {"opensm", "-F", "/lab/sm0/opensm.conf"}) {
  sys::ProcessInfo p;
  p.comm = "opensm";
  p.argv = std::move(argv);
  p.env = {"PATH=/usr/sbin:/usr/bin", "LD_PRELOAD=/usr/lib/umad2sim.so"};
  if (!sim_host.empty()) p.env.push_back("SIM_HOST=" + sim_host);
  p.cwd = "/lab/sm0";
  p.netns_inode = inode;
  return p;
}

class SmFailoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    daemons_.addNamespace("", kHostInode);
    daemons_.addNamespace("fcib-subnet", kLabInode);
    daemons_.addNamespace("fcib2-subnet", kOtherLabInode);
    sm0_ = daemons_.addProcess(openSm(kLabInode, "h0"));
    sm1_ = daemons_.addProcess(openSm(kLabInode, "h2"));
    other_lab_sm_ = daemons_.addProcess(openSm(kOtherLabInode, "h0"));
    sys::ProcessInfo sim;
    sim.comm = "ibsim";
    sim.netns_inode = kLabInode;
    ibsim_ = daemons_.addProcess(sim);
    daemons_.setDescriptorTarget(sm0_, 1, "/lab/sm0/opensm.out");
  }
  Fault fault(const std::string& mode, SubnetManagerTarget target = {"", "h0", "fcib-subnet"}) {
    return Fault{"sm_failover", target, {{"mode", mode}}};
  }

  FakeDaemonControl daemons_;
  SmFailover injector_{&daemons_};
  pid_t sm0_ = 0;
  pid_t sm1_ = 0;
  pid_t other_lab_sm_ = 0;
  pid_t ibsim_ = 0;
};

TEST_F(SmFailoverTest, KillEndsOnlyTheTargetsSmAndRevertRestartsItAsItRan) {
  const Fault kill = fault("kill");
  auto prior = injector_.capture(kill);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  EXPECT_EQ((*prior)["mode"], "kill");
  EXPECT_EQ((*prior)["pid"], sm0_);
  EXPECT_EQ((*prior)["argv"], (json{"opensm", "-F", "/lab/sm0/opensm.conf"}));
  EXPECT_EQ((*prior)["cwd"], "/lab/sm0");
  EXPECT_EQ((*prior)["netns"], "fcib-subnet");
  EXPECT_EQ((*prior)["log"], "/lab/sm0/opensm.out");
  ASSERT_TRUE(injector_.apply(kill).isOk());
  const auto signals = daemons_.signalsSent();
  ASSERT_EQ(signals.size(), 1u);
  EXPECT_EQ(signals[0], std::make_pair(sm0_, SIGKILL));
  EXPECT_FALSE(daemons_.alive(sm0_));
  EXPECT_TRUE(daemons_.alive(sm1_));
  EXPECT_TRUE(daemons_.alive(other_lab_sm_));
  EXPECT_EQ((*injector_.observe(kill))["running"], false);
  // Applying again finds nothing to kill: one fault, not an error.
  EXPECT_TRUE(injector_.apply(kill).isOk());

  ASSERT_TRUE(injector_.revert(kill, *prior).isOk());
  const auto started = daemons_.started();
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].argv, (std::vector<std::string>{"opensm", "-F", "/lab/sm0/opensm.conf"}));
  EXPECT_EQ(started[0].env, openSm(kLabInode, "h0").env);
  EXPECT_EQ(started[0].cwd, "/lab/sm0");
  EXPECT_EQ(started[0].netns, "fcib-subnet");
  EXPECT_EQ(started[0].log_path, "/lab/sm0/opensm.out");
  EXPECT_EQ((*injector_.observe(kill))["running"], true);
  // Reverting again: it runs, nothing more is started.
  ASSERT_TRUE(injector_.revert(kill, *prior).isOk());
  EXPECT_EQ(daemons_.started().size(), 1u);
}

TEST_F(SmFailoverTest, StopSendsSigtermAndAHungSmIsAnErrorNamingIt) {
  ASSERT_TRUE(injector_.apply(fault("stop")).isOk());
  EXPECT_EQ(daemons_.signalsSent().back(), std::make_pair(sm0_, SIGTERM));
  daemons_.ignoreSignals(true);
  const auto status = injector_.apply(fault("kill", {"", "h2", "fcib-subnet"}));
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_NE(status.message().find("OpenSM (pid " + std::to_string(sm1_) + ") still runs"),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("after SIGKILL"), std::string::npos);
}

TEST_F(SmFailoverTest, ARealHostsSmIsTheOneBoundToTheTargetsGuid) {
  const pid_t bound =
      daemons_.addProcess(openSm(kHostInode, "", {"opensm", "-g", "0x2c903000a1b2c", "-p", "10"}));
  daemons_.addProcess(openSm(kHostInode, "", {"opensm", "-g", "0x2c903000a1b2d"}));
  auto prior = injector_.capture(fault("kill", {"0x0002C903000A1B2C", "", ""}));
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  EXPECT_EQ((*prior)["pid"], bound);
  EXPECT_EQ((*prior)["netns"], "");
  EXPECT_EQ((*prior)["log"], "");  // its output goes nowhere we could name
}

TEST_F(SmFailoverTest, NoneOrSeveralSmsAreRefusedBeforeAnythingIsTouched) {
  auto none = injector_.capture(fault("kill", {"", "h5", "fcib-subnet"}));
  ASSERT_FALSE(none.isOk());
  EXPECT_EQ(none.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(none.status().message(),
            "no OpenSM runs as the subnet manager on node h5 in namespace fcib-subnet");
  auto no_lab = injector_.capture(fault("kill", {"", "h0", "fcib-gone"}));
  ASSERT_FALSE(no_lab.isOk());
  EXPECT_NE(no_lab.status().message().find("no network namespace fcib-gone: is the IB lab up?"),
            std::string::npos);
  daemons_.addProcess(openSm(kHostInode, ""));
  daemons_.addProcess(openSm(kHostInode, ""));
  auto several = injector_.capture(fault("kill", {"", "sm-host", ""}));
  ASSERT_FALSE(several.isOk());
  EXPECT_NE(several.status().message().find("2 OpenSM processes could be"), std::string::npos)
      << several.status().message();
  EXPECT_TRUE(daemons_.signalsSent().empty());
  auto wrong = injector_.capture(Fault{"sm_failover", InterfaceTarget{"", "eth0"}, {}});
  ASSERT_FALSE(wrong.isOk());
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(wrong.status().message(),
            "sm_failover acts on a subnet_manager, not on target type interface");
}

TEST_F(SmFailoverTest, PortDownUnlinksTheSmsPortInTheSimulatorAndRevertRelinksIt) {
  const Fault port_down = fault("port_down");
  auto prior = injector_.capture(port_down);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  EXPECT_EQ((*prior)["mode"], "port_down");
  ASSERT_TRUE(injector_.apply(port_down).isOk());
  ASSERT_TRUE(injector_.revert(port_down, *prior).isOk());
  const auto written = daemons_.written();
  ASSERT_EQ(written.size(), 2u);
  const std::string console = "/proc/" + std::to_string(ibsim_) + "/fd/0";
  EXPECT_EQ(written[0].path, console);
  EXPECT_EQ(written[0].line, "Unlink \"h0\"[1]");
  EXPECT_EQ(written[1].line, "ReLink \"h0\"[1]");
  EXPECT_TRUE(daemons_.signalsSent().empty());  // the SM itself lives on
  // A real subnet has no simulator to unlink in.
  daemons_.addProcess(openSm(kHostInode, ""));
  auto real = injector_.capture(fault("port_down", {"", "sm-host", ""}));
  ASSERT_FALSE(real.isOk());
  EXPECT_EQ(real.status().code(), StatusCode::kNotSupported);
}

TEST_F(SmFailoverTest, ARestartThatFailsIsReportedAndAGoneLabIsReverted) {
  const Fault kill = fault("kill");
  auto prior = injector_.capture(kill);
  ASSERT_TRUE(prior.isOk());
  ASSERT_TRUE(injector_.apply(kill).isOk());
  daemons_.failOn(1, core::Status(core::StatusCode::kNotFound, "opensm: execvp: No such file"));
  const auto failed = injector_.revert(kill, *prior);
  ASSERT_FALSE(failed.isOk());
  EXPECT_EQ(failed.message(), "opensm: execvp: No such file");
  // The lab went down meanwhile (no namespace): nothing left to restart into.
  FakeDaemonControl gone;
  SmFailover after_lab_down(&gone);
  EXPECT_TRUE(after_lab_down.revert(kill, *prior).isOk());
  EXPECT_TRUE(gone.started().empty());
}

TEST_F(SmFailoverTest, ValidatesItsModes) {
  EXPECT_TRUE(injector_.validate(json::object()).isOk());
  EXPECT_TRUE(injector_.validate({{"mode", "port_down"}}).isOk());
  const auto bad = injector_.validate({{"mode", "handover"}});
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.message().find("mode"), std::string::npos);
  EXPECT_EQ(injector_.info().kind, "sm_failover");
  EXPECT_TRUE(injector_.info().available);
}

}  // namespace
}  // namespace fabric_chaos::injectors
