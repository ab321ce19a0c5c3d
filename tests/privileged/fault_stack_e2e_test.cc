// Stacked faults and failing reverts on a real namespace lab, through serve's REST API, checked
// with `ip`, `tc` and `nft` (never the injectors' own code):
// - two crossing link flaps on one port hold it down for their union, and the lab ends exactly as
//   it was before the run (a snapshot of links, qdiscs and nft rulesets);
// - two overlapping loss faults on one port are refused with a 422 naming both steps;
// - kill -9 of serve and its guardian in the middle of the overlap, then a restart, ends with the
//   pre-run snapshot;
// - a revert that fails (the switch's namespace held away while the port is down) is retried until
//   it works, and one
//   that keeps failing ends the run in error with fault_left, is listed by GET /v1/faults and is
//   taken back by POST /v1/faults/{id}/revert.

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>

#include "tests/privileged/support.h"

namespace fabric_chaos::testing {
namespace {

using nlohmann::json;

// What a fault could leave behind on the lab, as the kernel's own tools print it.
std::string labSnapshot() {
  std::string out;
  for (const char* ns : {"fcl-sw0", "fcl-h0", "fcl-h1", "fcl-h2", "fcl-h3"}) {
    const std::string n = ns;
    out += "## " + n + " links\n" + runShell("ip -n " + n + " -o link show").out;
    out += "## " + n + " qdiscs\n" + runShell("tc -n " + n + " qdisc show").out;
    out += "## " + n + " nft\n" + runShell("ip netns exec " + n + " nft list ruleset").out;
  }
  return out;
}

// The lab settles (a port brought up takes a moment to show LOWER_UP): compare for a while.
void expectSnapshotReturns(const std::string& before, int timeout_ms) {
  std::string now;
  waitFor(
      [&] {
        now = labSnapshot();
        return now == before;
      },
      timeout_ms);
  EXPECT_EQ(now, before);
}

json flapStep(const std::string& host, int64_t at_ms, int64_t down_ms) {
  return {{"kind", "link_flap"},
          {"target", {{"host", host}, {"side", "switch"}}},
          {"at_ms", at_ms},
          {"params", {{"down_ms", down_ms}}}};
}

json scenarioOf(const std::string& name, json steps, int64_t recovery_ms = 4000) {
  return {{"version", 1},
          {"name", name},
          {"workload", {{"message_bytes", 65536}, {"compute_ms", 5}, {"peer_timeout_ms", 30000}}},
          {"baseline_ms", 1000},
          {"steps", std::move(steps)},
          {"recovery_ms", recovery_ms},
          {"max_duration_ms", 120000}};
}

json runEvents(int port, int64_t id) {
  return httpRequest(port, "GET", "/v1/runs/" + std::to_string(id) + "/events").json()["events"];
}

// While it lives, /run/netns/fcl-sw0 is covered by a bind mount of an empty file, so entering the
// switch namespace fails (setns: EINVAL) and so does any revert there; a vanished port or
// namespace would not do, since reverting a fault that is no longer there succeeds.
class SwitchNamespaceHeld {
 public:
  explicit SwitchNamespaceHeld(const std::string& dir) : file_(dir + "/not-a-netns") {
    runShell("touch " + file_);
    held_ = runShell("mount --bind " + file_ + " /run/netns/fcl-sw0").exit_code == 0;
  }
  ~SwitchNamespaceHeld() { release(); }
  bool held() const { return held_; }
  void release() {
    if (held_) held_ = runShell("umount /run/netns/fcl-sw0").exit_code != 0;
  }

 private:
  std::string file_;
  bool held_ = false;
};

class FaultStackOnALab : public ServeWithLabTest {
 protected:
  FaultStackOnALab() : ServeWithLabTest(4) {}
};

TEST_F(FaultStackOnALab, CrossingFlapsHoldThePortDownForTheirUnionAndLeaveNothingBehind) {
  const std::string before = labSnapshot();
  LinkObserver observer("fcl-sw0", "p1");
  // 0-1000 ms and 500-1500 ms after the baseline.
  const int64_t id = startRun(scenarioOf(
      "crossing-flaps", json::array({flapStep("h1", 0, 1000), flapStep("h1", 500, 1000)})));
  ASSERT_GT(id, 0);
  json run = waitForFinalRun(port_, id, 90);
  auto changes = observer.stop();
  ASSERT_EQ(run.value("state", ""), "passed") << run.dump(2);

  // The observer saw the port go down once and come back once, 1500 ms later: the first flap's
  // end did not bring it up under the second, and the second's end did not leave it down.
  std::vector<LinkObserver::Change> transitions;
  for (const auto& c : changes) {
    if (transitions.empty() ? !c.admin_up : c.admin_up != transitions.back().admin_up) {
      transitions.push_back(c);
    }
  }
  ASSERT_EQ(transitions.size(), 2u) << "expected one down and one up";
  const int64_t origin_ns = run["attributes"]["clock_origin_steady_ns"].get<int64_t>();
  auto runMs = [&](int64_t t_ns) { return static_cast<double>(t_ns - origin_ns) / 1e6; };
  json events = runEvents(port_, id);
  auto applied = eventsOfKind(events, "fault_applied");
  auto reverted = eventsOfKind(events, "fault_reverted");
  ASSERT_EQ(applied.size(), 2u);
  ASSERT_EQ(reverted.size(), 2u);
  const double first_apply = applied[0]["detail"]["scheduled_ms"].get<double>();
  const double down_at = runMs(transitions[0].t_ns);
  const double up_at = runMs(transitions[1].t_ns);
  std::cout << "p1 seen down at " << down_at - first_apply << " ms and up at "
            << up_at - first_apply
            << " ms after the first scheduled apply (windows 0-1000 and 500-1500 ms)\n";
  // Down when the first window opens; up only once the second has ended (the observer can only
  // see a change after it happened), and promptly then.
  const double slack_ms = 100 * timingScale();
  EXPECT_LE(down_at - first_apply, slack_ms);
  EXPECT_GE(up_at - first_apply, 1500 - 5);
  EXPECT_LE(up_at - first_apply, 1500 + slack_ms);
  EXPECT_EQ(reverted[0]["detail"]["restored"], false);
  EXPECT_EQ(reverted[1]["detail"]["restored"], true);
  expectSnapshotReturns(before, 3000);
  EXPECT_TRUE(httpRequest(port_, "GET", "/v1/faults").json()["faults"].empty());
}

TEST_F(FaultStackOnALab, OverlappingFaultsOnOneRootQdiscAreRefusedWithA422) {
  const std::string before = labSnapshot();
  json loss = {{"kind", "packet_loss"},
               {"target", {{"host", "h1"}, {"side", "switch"}}},
               {"at_ms", 0},
               {"duration_ms", 2000},
               {"params", {{"percent", 5}, {"direction", "egress"}}}};
  json second = loss;
  second["at_ms"] = 1000;
  auto reply = httpRequest(port_, "POST", "/v1/runs",
                           json{{"scenario", scenarioOf("loss-on-loss", {loss, second})}}.dump());
  EXPECT_EQ(reply.status, 422) << reply.body;
  const std::string message = reply.json()["error"]["message"];
  EXPECT_NE(message.find("steps[0] (packet_loss) and steps[1] (packet_loss) overlap on "
                         "fcl-sw0/p1 from 1000 to 2000 ms"),
            std::string::npos)
      << message;
  // Nothing was stored or touched.
  EXPECT_TRUE(httpRequest(port_, "GET", "/v1/runs").json()["runs"].empty());
  EXPECT_EQ(labSnapshot(), before);
}

TEST_F(FaultStackOnALab, ARevertThatFailsOnceIsRetriedUntilThePortIsBack) {
  const std::string before = labSnapshot();
  const int64_t id = startRun(scenarioOf("held-port", json::array({flapStep("h1", 0, 1500)})));
  ASSERT_GT(id, 0);
  ASSERT_TRUE(waitFor([] { return !portAdminUp("p1"); }, 30000));
  // While it is down, hold the switch's namespace: the scheduled revert cannot reach the port.
  SwitchNamespaceHeld hold(dir_);
  ASSERT_TRUE(hold.held());
  const bool failed =
      waitFor([&] { return !eventsOfKind(runEvents(port_, id), "revert_error").empty(); }, 10000);
  hold.release();
  ASSERT_TRUE(failed);
  json run = waitForFinalRun(port_, id, 60);
  EXPECT_NE(run.value("state", ""), "error") << run.dump(2);
  json events = runEvents(port_, id);
  auto errors = eventsOfKind(events, "revert_error");
  auto reverted = eventsOfKind(events, "fault_reverted");
  ASSERT_FALSE(errors.empty());
  ASSERT_EQ(reverted.size(), 1u);
  EXPECT_EQ(reverted[0]["detail"]["attempts"].get<int>(), static_cast<int>(errors.size()) + 1);
  std::cout << errors.size() << " failed revert(s), then restored after "
            << reverted[0]["t_ms"].get<double>() - errors[0]["t_ms"].get<double>() << " ms\n";
  EXPECT_TRUE(portAdminUp("p1"));
  EXPECT_TRUE(httpRequest(port_, "GET", "/v1/faults").json()["faults"].empty());
  expectSnapshotReturns(before, 3000);
}

TEST_F(FaultStackOnALab, AFaultThatCannotBeRevertedIsReportedListedAndRevertedByTheOperator) {
  const std::string before = labSnapshot();
  const int64_t id = startRun(scenarioOf("lost-port", json::array({flapStep("h2", 0, 1000)}), 500));
  ASSERT_GT(id, 0);
  ASSERT_TRUE(waitFor([] { return !portAdminUp("p2"); }, 30000));
  SwitchNamespaceHeld hold(dir_);
  ASSERT_TRUE(hold.held());
  // The run retries for its budget (10 s), then gives up on it: an error, never a pass.
  json run = waitForFinalRun(port_, id, 60);
  hold.release();
  EXPECT_EQ(run.value("state", ""), "error") << run.dump(2);
  const json& left = run["result"]["fault_left"];
  ASSERT_EQ(left.size(), 1u) << run.dump(2);
  EXPECT_EQ(left[0]["kind"], "link_flap");
  EXPECT_EQ(left[0]["target"], "fcl-sw0/p2");
  EXPECT_GE(left[0]["attempts"].get<int>(), 5);
  EXPECT_NE(run.value("error", "").find("could not be reverted"), std::string::npos);
  EXPECT_FALSE(portAdminUp("p2"));  // still down: the report is true

  json faults = httpRequest(port_, "GET", "/v1/faults").json()["faults"];
  ASSERT_EQ(faults.size(), 1u) << faults.dump(2);
  EXPECT_EQ(faults[0]["run_id"], id);
  EXPECT_EQ(faults[0]["state"], "failed");
  EXPECT_EQ(faults[0]["owned_by_running_run"], false);
  EXPECT_EQ(faults[0]["target"]["ifname"], "p2");
  auto reverted = httpRequest(
      port_, "POST", "/v1/faults/" + std::to_string(faults[0]["id"].get<int64_t>()) + "/revert");
  EXPECT_EQ(reverted.status, 200) << reverted.body;
  EXPECT_TRUE(portAdminUp("p2"));
  EXPECT_TRUE(httpRequest(port_, "GET", "/v1/faults").json()["faults"].empty());
  expectSnapshotReturns(before, 3000);
}

// Its own serve, killed with its guardian in the middle of an overlap and started again on the
// same database.
class KillInAnOverlap : public RestartableServeTest {};

TEST_F(KillInAnOverlap, TheRestartEndsWithThePreRunSnapshot) {
  int port = start();
  ASSERT_GT(port, 0) << serve_->output();
  const std::string before = labSnapshot();
  // 0-20 s and 1-21 s on h3's port: killed while both hold it.
  const int64_t id = ::fabric_chaos::testing::startRun(
      port, scenarioOf("overlap-kill",
                       json::array({flapStep("h3", 0, 20000), flapStep("h3", 1000, 20000)})));
  ASSERT_GT(id, 0);
  ASSERT_TRUE(waitFor(
      [&] { return eventsOfKind(runEvents(port, id), "fault_applied").size() == 2; }, 30000));
  EXPECT_FALSE(portAdminUp("p3"));
  const auto guardians = guardiansOf(dir_);
  ASSERT_EQ(guardians.size(), 1u);
  ::kill(guardians[0], SIGKILL);
  serve_->kill(SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(portAdminUp("p3"));  // nothing reverted it: the crash left it

  port = start();
  ASSERT_GT(port, 0) << serve_->output();
  EXPECT_TRUE(waitFor([] { return portAdminUp("p3"); }, 2000));
  expectSnapshotReturns(before, 3000);
  EXPECT_TRUE(httpRequest(port, "GET", "/v1/faults").json()["faults"].empty());
  json run = httpRequest(port, "GET", "/v1/runs/" + std::to_string(id)).json();
  EXPECT_EQ(run.value("state", ""), "interrupted");
}

}  // namespace
}  // namespace fabric_chaos::testing
