// Crash safety on a real lab: `serve` and its guardian (app/guardian.h) are killed with SIGKILL
// while a fault is in force (a link held down, a loss fault in place: an nft table or a root
// netem, whichever backend the kernel gives), as when a whole cgroup is killed. The fault
// survives the crash — nothing reverted it — and the next `serve` on the same database reverts it
// at start-up, marks the run interrupted, and the workload ranks of the dead server are gone (they
// die with their parent). A serve killed alone is covered by its guardian:
// tests/privileged/guardian_test.cc.

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>

#include "tests/privileged/support.h"

namespace fabric_chaos::testing {
namespace {

using nlohmann::json;

int workloadRanksRunning() {
  return std::atoi(runShell("pgrep -f -c 'fabric-chaos [w]orkload' || true").out.c_str());
}

class CrashRecovery : public RestartableServeTest {
 protected:
  json longFault(const std::string& kind, const json& params, int64_t duration_ms) {
    json step = {{"kind", kind}, {"target", {{"host", "h2"}}}, {"at_ms", 0}, {"params", params}};
    if (kind != "link_flap") step["duration_ms"] = duration_ms;
    return {{"version", 1},
            {"name", "crash-" + kind},
            {"workload", {{"message_bytes", 65536}}},
            {"baseline_ms", 1000},
            {"steps", json::array({step})},
            {"recovery_ms", 1000}};
  }

  void crashDuring(const json& scenario, const std::function<bool()>& fault_in_force) {
    int port = start();
    ASSERT_GT(port, 0) << serve_->output();
    auto reply = httpRequest(port, "POST", "/v1/runs", json{{"scenario", scenario}}.dump());
    ASSERT_EQ(reply.status, 202) << reply.body;
    run_id_ = reply.json()["id"].get<int64_t>();
    ASSERT_TRUE(waitFor(fault_in_force, 30000)) << serve_->output();

    // The guardian first, or it would revert the fault as soon as serve is gone.
    const auto guardians = guardiansOf(dir_);
    ASSERT_EQ(guardians.size(), 1u);
    ::kill(guardians[0], SIGKILL);
    serve_->kill(SIGKILL);
    // Nothing reverted the fault: the crash really left it behind.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_TRUE(fault_in_force());
    // The ranks got SIGTERM from the kernel when their parent died.
    EXPECT_TRUE(waitFor([] { return workloadRanksRunning() == 0; }, 5000));

    const int64_t restart_ns = steadyNowNs();
    port = start();
    ASSERT_GT(port, 0) << serve_->output();
    EXPECT_TRUE(waitFor([&] { return !fault_in_force(); }, 2000));
    const double revert_ms = static_cast<double>(steadyNowNs() - restart_ns) / 1e6;
    std::cout << "fault reverted " << revert_ms << " ms after the restart began\n";
    EXPECT_NE(serve_->output().find("start-up recovery: reverted 1 leftover fault"),
              std::string::npos)
        << serve_->output();

    auto run = httpRequest(port, "GET", "/v1/runs/" + std::to_string(run_id_)).json();
    EXPECT_EQ(run.value("state", ""), "interrupted") << run.dump(2);
  }

  int64_t run_id_ = 0;
};

TEST_F(CrashRecovery, ALinkLeftDownByADeadServerComesBackUpAtTheNextStart) {
  crashDuring(longFault("link_flap", {{"down_ms", 60000}}, 0), [] { return !portAdminUp("p2"); });
  EXPECT_TRUE(portAdminUp("p2"));
}

TEST_F(CrashRecovery, ALossTableLeftByADeadServerIsRemovedAtTheNextStart) {
  // Egress (the packets sent to h2): the one direction both backends do (netem refuses others).
  crashDuring(longFault("packet_loss", {{"percent", 10}, {"direction", "egress"}}, 60000),
              [] { return lossFaultInForce("fcl-sw0", "p2"); });
  EXPECT_FALSE(lossFaultInForce("fcl-sw0", "p2"));
  if (!HasFatalFailure()) {
    EXPECT_EQ(lossFaultsIn("fcl-sw0"), "");
  }
}

}  // namespace
}  // namespace fabric_chaos::testing
