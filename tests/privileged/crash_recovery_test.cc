// Crash safety on a real lab: `serve` and its guardian (app/guardian.h) are killed with SIGKILL
// while a fault is in force (a link held down, an nft loss table in place), as when a whole
// cgroup is killed. The fault survives the crash — nothing reverted it — and the next `serve` on
// the same database reverts it at start-up, marks the run interrupted, and the workload ranks of
// the dead server are gone (they die with their parent). A serve killed alone is covered by its
// guardian: tests/privileged/guardian_test.cc.

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>

#include "tests/privileged/support.h"

namespace fabric_chaos::testing {
namespace {

using nlohmann::json;

bool waitFor(const std::function<bool()>& condition, int timeout_ms) {
  const int64_t deadline = steadyNowNs() + int64_t{timeout_ms} * 1000000;
  while (steadyNowNs() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return condition();
}

bool portAdminUp(const std::string& port) {
  auto out = runShell("ip -n fcl-sw0 -o link show dev " + port);
  auto open = out.out.find('<');
  auto close = out.out.find('>');
  if (out.exit_code != 0 || open == std::string::npos) return false;
  return ("," + out.out.substr(open + 1, close - open - 1) + ",").find(",UP,") != std::string::npos;
}

bool lossTablePresent(const std::string& port) {
  return runShell("ip netns exec fcl-sw0 nft list table netdev fc_loss_" + port +
                  " >/dev/null 2>&1")
             .exit_code == 0;
}

int workloadRanksRunning() {
  return std::atoi(runShell("pgrep -f -c 'fabric-chaos [w]orkload' || true").out.c_str());
}

class CrashRecovery : public ::testing::Test {
 protected:
  void SetUp() override {
    FC_REQUIRE_ROOT();
    dir_ = makeTempDir();
  }
  void TearDown() override {
    serve_.reset();
    runShell(std::string(std::getenv("FC_BINARY")) + " lab down --state-dir " + dir_ +
             "/state >/dev/null 2>&1");
    EXPECT_TRUE(namespacesWithPrefix("fcl-").empty());
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  int start() {
    serve_ = std::make_unique<ServeProcess>(std::vector<std::string>{"--with-lab", "4"}, dir_);
    return serve_->waitForPort(60000);
  }

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

  std::string dir_;
  std::unique_ptr<ServeProcess> serve_;
  int64_t run_id_ = 0;
};

TEST_F(CrashRecovery, ALinkLeftDownByADeadServerComesBackUpAtTheNextStart) {
  crashDuring(longFault("link_flap", {{"down_ms", 60000}}, 0), [] { return !portAdminUp("p2"); });
  EXPECT_TRUE(portAdminUp("p2"));
}

TEST_F(CrashRecovery, ALossTableLeftByADeadServerIsRemovedAtTheNextStart) {
  crashDuring(longFault("packet_loss", {{"percent", 10}}, 60000),
              [] { return lossTablePresent("p2"); });
  EXPECT_FALSE(lossTablePresent("p2"));
}

}  // namespace
}  // namespace fabric_chaos::testing
