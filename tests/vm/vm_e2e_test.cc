// The VM lab end to end through the REST API: two Debian 6.12 guests, each running this binary as
// its agent, a controller (`serve`) reaching them over HTTP. Checked from inside the guests: each
// guest prints its eth0 root qdisc (`tc qdisc show`) on its serial console every 200 ms, and the
// test reads the console logs on the host — an observer independent of the agent and injector.

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <regex>

#include "tests/privileged/support.h"
#include "tests/vm/vm_support.h"

namespace fabric_chaos::testing {
namespace {

using nlohmann::json;

bool hasNetem(const std::string& qdisc) { return qdisc.find("netem") != std::string::npos; }

class VmLabEndToEnd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!missingPrivilegedPrerequisite().empty() || !missingVmPrerequisite().empty()) return;
    dir_ = new std::string(makeTempDir());
    lab_output_ = new std::string();
    launchLab();
  }

  static void launchLab() {
    const std::string binary = std::getenv("FC_BINARY");
    const std::string state = *dir_ + "/state";
    // The guest's own observer: its eth0 root qdisc on the serial console every 200 ms, stamped
    // with the guest's uptime just before and just after tc looked (ConsoleWatcher's "@A-B ").
    // And rxe0's port as the kernel shows it in sysfs: its state, GID 1 (the IPv4-mapped GID of
    // eth0's address, after the default GID) and the indexes that hold an IPv4-mapped GID.
    const std::string agent =
        "(while :; do read a x < /proc/uptime; q=$(tc qdisc show dev eth0 | head -n1); "
        "read z x < /proc/uptime; echo \"FC_QDISC @$a-$z $q\"; "
        // Shell builtins only (a fork costs tens of ms in the TCG guest), GID indexes 0-7.
        "cd /sys/class/infiniband/rxe0/ports/1 2>/dev/null && { read s < state; g=; "
        "read g < gids/1 2>/dev/null; v=; for i in 0 1 2 3 4 5 6 7; do x=; "
        "read x < gids/$i 2>/dev/null; case $x in *:ffff:*) v=$v$i;; esac; done; "
        "echo FC_RDMA $s gid1=$g v4=$v; }; cd /; "
        "sleep 0.2; done) & "
        // Rank 1's stderr (its agent's rank log), for a failure's evidence.
        "(tail -F -n 0 /run/fabric-chaos-agent/logs/rank-1.log 2>/dev/null | "
        "while read -r l; do echo \"FC_RANKLOG $l\"; done) & exec " +
        binary + " agent --listen 0.0.0.0:7070 --token-file " + state +
        "/vm/agent.token --allow eth0 --mgmt-if eth1";
    auto up = runShell(binary + " lab up --kind vm --hosts 2 --state-dir " + state +
                       " --agent-command '" + agent + "' 2>&1");
    lab_up_ = up.exit_code == 0;
    *lab_output_ = up.out;
  }

  static std::string panickedGuest() {
    return testing::panickedGuest(*dir_ + "/state", {"vm0", "vm1"});
  }
  static std::string guestPanicLine(const std::string& vm) {
    return testing::guestPanicLine(*dir_ + "/state", vm);
  }

  // A fresh lab (and serve) after a guest died; the lab's temporary directory is kept.
  bool relaunchLab() {
    if (serve_) serve_->stop(30000);
    serve_.reset();
    runShell(std::string(std::getenv("FC_BINARY")) + " lab down --kind vm --state-dir " + *dir_ +
             "/state >/dev/null 2>&1");
    launchLab();
    if (!lab_up_) return false;
    serve_ = std::make_unique<ServeProcess>(std::vector<std::string>{}, *dir_);
    port_ = serve_->waitForPort(30000);
    return port_ > 0;
  }

  // Soft-RoCE in the 6.12 guests can panic their kernel under retransmission or QP teardown
  // ("Oops: double fault" or a bad write in rxe's requester, from its rxe_wq work queue; 0, 2, 1,
  // 1, 0 and 0 panics in six runs of the whole file). That is the lab failing, not the
  // product: `attempt` (which starts a run and waits for its end, asserting nothing about the
  // outcome) runs again after the test says so, keeps the consoles and relaunches the lab, up to
  // two relaunches. A third panic fails the test.
  void withRelaunchesOnGuestPanic(const std::string& what, const std::function<void()>& attempt) {
    for (int n = 1;; ++n) {
      attempt();
      if (HasFatalFailure()) return;
      const std::string panicked = panickedGuest();
      if (panicked.empty()) return;
      keepEvidence("attempt" + std::to_string(n));
      ASSERT_LE(n, 2) << panicked << "'s kernel panicked a third time during " << what << ": "
                      << guestPanicLine(panicked);
      std::cout << "vm_e2e: " << panicked << "'s guest kernel panicked during " << what << " ("
                << guestPanicLine(panicked)
                << "); consoles kept; relaunching the lab and running it again\n";
      ASSERT_TRUE(relaunchLab()) << *lab_output_;
    }
  }

  static void TearDownTestSuite() {
    if (dir_ == nullptr) return;
    runShell(std::string(std::getenv("FC_BINARY")) + " lab down --kind vm --state-dir " + *dir_ +
             "/state >/dev/null 2>&1");
    std::filesystem::remove_all(*dir_);
    delete dir_;
    delete lab_output_;
    dir_ = nullptr;
  }

  void SetUp() override {
    FC_REQUIRE_ROOT();
    FC_REQUIRE(missingVmPrerequisite());
    ASSERT_TRUE(lab_up_) << "lab up --kind vm failed:\n" << *lab_output_;
    if (const std::string vm = panickedGuest(); !vm.empty()) {
      // An earlier test's guest died (its own failure says so): this test gets a working lab.
      std::cout << "vm_e2e: " << vm << " panicked earlier (" << guestPanicLine(vm)
                << "); relaunching the lab\n";
      ASSERT_TRUE(relaunchLab()) << *lab_output_;
      return;
    }
    serve_ = std::make_unique<ServeProcess>(std::vector<std::string>{}, *dir_);
    port_ = serve_->waitForPort(30000);
    ASSERT_GT(port_, 0) << serve_->output();
  }

  void TearDown() override {
    if (serve_) serve_->stop(30000);
    if (HasFailure()) keepEvidence();
    // Whatever happened, the next test starts without a fault.
    if (dir_ != nullptr && lab_up_) {
      ConsoleWatcher vm1(*dir_ + "/state/vm/vm1.console.log", "FC_QDISC ");
      EXPECT_NE(vm1.waitFor([](const std::string& q) { return !hasNetem(q); }, 10000), 0);
    }
  }

  // A failed test's guest consoles (the agents' own logs and the qdisc lines) and serve's output
  // go to $FC_ARTIFACTS/vm_e2e/<test>/: CI keeps artifacts, not the lab's temporary directory.
  void keepEvidence(const std::string& suffix = "") {
    const char* artifacts = std::getenv("FC_ARTIFACTS");
    if (artifacts == nullptr || dir_ == nullptr) return;
    const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    const std::filesystem::path to =
        std::filesystem::path(artifacts) / "vm_e2e" / (test + (suffix.empty() ? "" : "." + suffix));
    std::error_code ec;
    std::filesystem::create_directories(to, ec);
    for (const char* vm : {"vm0", "vm1"}) {
      const std::string log = *dir_ + "/state/vm/" + vm + ".console.log";
      std::filesystem::copy_file(log, to / (std::string(vm) + ".console.log"),
                                 std::filesystem::copy_options::overwrite_existing, ec);
    }
    if (serve_) std::ofstream(to / "serve.log") << serve_->output();
    std::cerr << "vm_e2e: guest consoles and serve's output kept in " << to << "\n";
  }

  // Polls the run until it is final; `console`, when given, is read on every poll (100 ms), so
  // that the times at which its lines were seen are close to when the guest printed them.
  json waitForFinalRun(int64_t id, int timeout_s, ConsoleWatcher* console = nullptr) {
    const int64_t deadline = steadyNowNs() + int64_t{timeout_s} * 1000000000;
    json run;
    int64_t next_run_poll = 0;
    while (steadyNowNs() < deadline) {
      if (console != nullptr) console->mark();
      if (steadyNowNs() >= next_run_poll) {
        run = httpRequest(port_, "GET", "/v1/runs/" + std::to_string(id)).json();
        const std::string state = run.value("state", "");
        if (state == "passed" || state == "failed" || state == "error" || state == "aborted") {
          break;
        }
        next_run_poll = steadyNowNs() + 250'000'000;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(console != nullptr ? 100 : 250));
    }
    return run;
  }

  static std::string* dir_;
  static std::string* lab_output_;
  static bool lab_up_;
  std::unique_ptr<ServeProcess> serve_;
  int port_ = 0;
  // How long vm1 had a netem root during a run, by its own clock (ConsoleWatcher::guestSpanOf).
  std::optional<ConsoleWatcher::GuestSpan> observed_netem_;
};

std::string* VmLabEndToEnd::dir_ = nullptr;
std::string* VmLabEndToEnd::lab_output_ = nullptr;
bool VmLabEndToEnd::lab_up_ = false;

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

TEST_F(VmLabEndToEnd, NetemDelayRunsThroughTheRemoteAgentAndIsMeasuredAndScored) {
  ConsoleWatcher vm1(*dir_ + "/state/vm/vm1.console.log", "FC_QDISC ");
  ASSERT_NE(vm1.waitFor([](const std::string& q) { return !q.empty(); }, 10000), 0)
      << "the guest prints no qdisc";
  const std::string before = vm1.latest();
  ASSERT_FALSE(hasNetem(before)) << before;

  auto reply = httpRequest(port_, "POST", "/v1/runs", json{{"scenario", "netem-delay"}}.dump());
  ASSERT_EQ(reply.status, 202) << reply.body;
  const int64_t id = reply.json()["id"].get<int64_t>();
  // Seen from inside vm1 while the run is on.
  EXPECT_NE(vm1.waitFor(hasNetem, 120000), 0) << "vm1 never showed a netem root qdisc";
  json run = waitForFinalRun(id, 180);
  ASSERT_TRUE(run.value("state", "") == "passed" || run.value("state", "") == "failed")
      << run.dump(2);
  ASSERT_TRUE(run["score"].is_number());
  EXPECT_EQ(run["fabric"], "vm-lab");
  EXPECT_EQ(run["attributes"]["backends"].value("netem", ""), "netem");

  // After the revert vm1's qdisc is exactly what it was.
  EXPECT_NE(vm1.waitFor([&](const std::string& q) { return q == before; }, 10000), 0)
      << "before: " << before << "\nnow: " << vm1.latest();

  // The delay is in the measurements: every ring step crosses vm1's delayed egress.
  const auto& step = run["result"]["analysis"]["steps"][0];
  const double fault_start = step["fault_start_ms"].get<double>();
  const double fault_end = step["fault_end_ms"].get<double>();
  const double baseline_end = run["result"]["baseline"]["end_ms"].get<double>();
  auto samples = httpRequest(port_, "GET", "/v1/runs/" + std::to_string(id) + "/samples").json();
  std::vector<double> during;
  std::vector<double> baseline;
  for (const auto& s : samples["samples"]) {
    const double start = s["start_ms"].get<double>();
    const double duration = s["duration_ms"].get<double>();
    if (start > fault_start + 200 && start + duration < fault_end) during.push_back(duration);
    if (start + duration < baseline_end) baseline.push_back(duration);
  }
  ASSERT_GE(during.size(), 10u);
  ASSERT_GE(baseline.size(), 10u);
  std::cout << "iteration median: baseline " << median(baseline) << " ms, under 20 ms delay "
            << median(during) << " ms; retained " << step["retained"].get<double>() << ", recovery "
            << step["time_to_recover_ms"] << " ms, score " << run["score"].get<double>() << "\n";
  // With two ranks every collective waits for at least one chunk from vm1 (the second ring step
  // is pipelined behind the first), so no collective beats the 20 ms delay, less jitter; and the
  // delay lengthens the TCG-slow baseline clearly. Not by a fixed half of itself: when the guests
  // are slow their own CPU time overlaps part of the wait (a CI run: 28.2 -> 37.3 ms, where runs
  // with an 11-13 ms baseline gain 18-19 ms), so a quarter of it.
  EXPECT_GE(median(during), 18);
  EXPECT_GE(median(during) - median(baseline), 5) << run["timeline"].dump(1);
  EXPECT_LT(step["retained"].get<double>(), 0.9);
  EXPECT_TRUE(step["recovered"].get<bool>()) << step.dump();
}

// verbs-cqe-error: the ranks run with the verbs fault library loaded, and the agent on vm1 arms
// rank 1's with one retry-exceeded completion. Seen from the controller: the fabric's description
// lists the ranks' shims (as vm1's agent finds them by their sockets) with the injection made;
// rank 1 reports the peer lost with the injected status, as libibverbs names it; the ring
// re-forms and the analysis measures its recovery.
TEST_F(VmLabEndToEnd, AVerbsCompletionErrorBreaksTheRingWhichReformsAndRecovers) {
  int64_t id = 0;
  json shim_seen;
  json run;
  withRelaunchesOnGuestPanic("the verbs-cqe-error run", [&] {
    auto reply =
        httpRequest(port_, "POST", "/v1/runs", json{{"scenario", "verbs-cqe-error"}}.dump());
    ASSERT_EQ(reply.status, 202) << reply.body;
    id = reply.json()["id"].get<int64_t>();
    // While it runs, vm1's agent lists rank 1's shim, armed and then with its one injection.
    shim_seen = json();
    const int64_t deadline = steadyNowNs() + 240'000'000'000;
    while (steadyNowNs() < deadline) {
      run = httpRequest(port_, "GET", "/v1/runs/" + std::to_string(id)).json();
      const std::string state = run.value("state", "");
      if (state == "passed" || state == "failed" || state == "error" || state == "aborted") break;
      const json fabric = httpRequest(port_, "GET", "/v1/fabrics/vm-lab").json();
      for (const auto& host : fabric.value("hosts", json::array())) {
        for (const auto& shim : host["agent"].value("verbs_shims", json::array())) {
          if (shim["rank"] == 1 && !shim["armed"].empty() && shim["armed"][0]["fired"] == 1) {
            shim_seen = shim;
            shim_seen["host"] = host["name"];
          }
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  });
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(run.value("state", "") == "passed" || run.value("state", "") == "failed")
      << run.dump(2);
  ASSERT_FALSE(shim_seen.is_null()) << "vm1's agent never listed rank 1's shim with its injection";
  EXPECT_EQ(shim_seen["host"], "vm1");
  EXPECT_EQ(shim_seen["armed"][0]["kind"], "cqe_error");
  EXPECT_EQ(shim_seen["devices"], json::array({"rxe0"}));

  const json events =
      httpRequest(port_, "GET", "/v1/runs/" + std::to_string(id) + "/events").json()["events"];
  ASSERT_EQ(eventsOfKind(events, "fault_applied").size(), 1u) << events.dump(1);
  ASSERT_EQ(eventsOfKind(events, "fault_reverted").size(), 1u) << events.dump(1);
  bool rank1_saw_it = false;
  for (const json& lost : eventsOfKind(events, "peer_lost")) {
    const json& detail = lost["detail"];
    if (detail.value("rank", -1) == 1 &&
        detail.value("wc_status", "") == "transport retry counter exceeded") {
      rank1_saw_it = true;
      EXPECT_EQ(detail.value("reason", ""), "timeout") << detail.dump();
    }
  }
  EXPECT_TRUE(rank1_saw_it) << "rank 1 did not report the injected retry-exceeded completion\n"
                            << events.dump(1);
  const auto& step = run["result"]["analysis"]["steps"][0];
  ASSERT_TRUE(step["recovered"].get<bool>()) << step.dump(1);
  std::cout << "verbs-cqe-error: longest stall " << step["longest_stall_ms"] << " ms, recovery "
            << step["time_to_recover_ms"] << " ms, retained " << step["retained"] << ", score "
            << run["score"] << "; shim on " << shim_seen["host"].get<std::string>() << ": "
            << shim_seen.dump() << "\n";
}

// The rank-1 events of a run's peer_lost kind, one line each, for failure messages and the log.
std::vector<json> peerLostOfRank(const json& events, int rank) {
  std::vector<json> out;
  for (const json& lost : eventsOfKind(events, "peer_lost")) {
    if (lost["detail"].value("rank", -1) == rank) out.push_back(lost["detail"]);
  }
  return out;
}

// A run's events, one line each (run ms, kind, rank, message), samples left out: where the time
// between a fault and the ring's recovery went.
void printTimeline(const json& events) {
  std::cout << "timeline:\n";
  for (const json& e : events) {
    const json& detail = e.value("detail", json::object());
    std::cout << "  " << e.value("t_ms", 0.0) << " ms " << e.value("kind", "") << " rank "
              << detail.value("rank", -1) << " " << detail.value("message", "") << "\n";
  }
}

// The indexes of rxe0's port 1 that hold an IPv4-mapped GID, as an FC_RDMA line shows them ("" for
// none).
std::string ipv4GidIndexes(const std::string& line) {
  const size_t at = line.find("v4=");
  return at == std::string::npos ? "" : line.substr(at + 3);
}

// gid-change: vm1's agent takes away eth0's IPv4 address, the one behind rank 1's RoCE GID, for
// 5 s (the built-in scenario's 2 s, lengthened). Seen from inside vm1 (its console prints the
// port's state, GID 1 and the indexes holding an IPv4-mapped GID every 200 ms): no IPv4-mapped GID
// is left during the step, and one is back on an active port afterwards, at whatever index the
// kernel gave it. The ring loses its connections through vm1, re-forms, and the analysis measures
// the recovery.
TEST_F(VmLabEndToEnd, AGidChangeOnRank1BreaksTheRingUntilTheAddressIsBack) {
  // Made afresh for each attempt: a relaunched lab writes a new console.
  std::unique_ptr<ConsoleWatcher> watcher;
  std::string before;
  size_t from = 0;
  int64_t id = 0;
  json run;
  withRelaunchesOnGuestPanic("the gid-change run", [&] {
    watcher = std::make_unique<ConsoleWatcher>(*dir_ + "/state/vm/vm1.console.log", "FC_RDMA ");
    ASSERT_NE(watcher->waitFor([](const std::string& v) { return !v.empty(); }, 10000), 0);
    before = watcher->latest();
    ASSERT_FALSE(ipv4GidIndexes(before).empty()) << "vm1's rxe0 has no IPv4-mapped GID: " << before;
    ASSERT_NE(before.find("ACTIVE"), std::string::npos) << before;
    from = watcher->watched().size();
    // The built-in scenario with the address gone for 5 s instead of 2: in a TCG guest the apply
    // can land 2.3 s after its instant (CI), and the 0.3 s left of a 2 s window slipped between
    // two lines of vm1's console, which comes round every ~1.3 s under rxe's load.
    json scenario = httpRequest(port_, "GET", "/v1/scenarios/gid-change").json();
    ASSERT_TRUE(scenario.contains("steps")) << scenario.dump();
    scenario["steps"][0]["duration_ms"] = 5000;
    auto reply = httpRequest(port_, "POST", "/v1/runs", json{{"scenario", scenario}}.dump());
    ASSERT_EQ(reply.status, 202) << reply.body;
    id = reply.json()["id"].get<int64_t>();
    run = waitForFinalRun(id, 240, watcher.get());
  });
  ASSERT_FALSE(HasFatalFailure());
  ConsoleWatcher& rdma = *watcher;
  ASSERT_TRUE(run.value("state", "") == "passed" || run.value("state", "") == "failed")
      << run.dump(2);

  const std::vector<ConsoleWatcher::Line> lines = rdma.watched();
  size_t without = 0;
  for (size_t i = from; i < lines.size(); ++i) without += ipv4GidIndexes(lines[i].text).empty();
  EXPECT_GT(without, 0u) << "vm1's console always showed an IPv4-mapped GID during the run";
  const auto back = [](const std::string& v) {
    return v.find("ACTIVE") != std::string::npos && !ipv4GidIndexes(v).empty();
  };
  EXPECT_NE(rdma.waitFor(back, 10000), 0)
      << "no IPv4-mapped GID back on an active port: " << rdma.latest();
  const json events =
      httpRequest(port_, "GET", "/v1/runs/" + std::to_string(id) + "/events").json()["events"];
  ASSERT_EQ(eventsOfKind(events, "fault_applied").size(), 1u) << events.dump(1);
  ASSERT_EQ(eventsOfKind(events, "fault_reverted").size(), 1u) << events.dump(1);
  const std::vector<json> lost = eventsOfKind(events, "peer_lost");
  EXPECT_FALSE(lost.empty()) << "no rank lost a peer while rank 1's address was gone\n"
                             << events.dump(1);
  const auto& step = run["result"]["analysis"]["steps"][0];
  ASSERT_TRUE(step["recovered"].get<bool>()) << step.dump(1);
  std::cout << "gid-change: vm1 before \"" << before << "\", after \"" << rdma.latest() << "\" ("
            << without << " console lines without an IPv4 GID); longest stall "
            << step["longest_stall_ms"] << " ms, recovery " << step["time_to_recover_ms"]
            << " ms, score " << run["score"] << "; peer_lost:";
  for (const json& e : lost) std::cout << " " << e["detail"].dump();
  std::cout << "\n";
  printTimeline(events);
}

// rdma-device-reset: rank 1's port down and its QPs failing for 2 s, together. Seen from inside
// vm1: the port is DOWN for about the step and ACTIVE with the same GID afterwards. Rank 1 reports
// its peer lost with a completion status or CM event, the ring re-forms, and the analysis measures
// the recovery of the one step that both faults make.
TEST_F(VmLabEndToEnd, TheVerbsRingDetectsEachVerbsFaultReformsAndIsMeasured) {
  const json scenario = json::parse(R"({
    "version": 1,
    "name": "verbs-each-fault",
    "description": "qp_error, post_fail and completion_delay on rank 1, one after another",
    "fabric": "vm-lab",
    "workload": {"transport": "verbs", "message_bytes": 65536, "compute_ms": 5,
                 "peer_timeout_ms": 20000},
    "baseline_ms": 3000,
    "steps": [
      {"kind": "verbs_qp_error", "target": {"rank": 1}, "at_ms": 0, "duration_ms": 1000,
       "params": {"count": 1}},
      {"kind": "verbs_post_fail", "target": {"rank": 1}, "at_ms": 8000, "duration_ms": 1000,
       "params": {"op": "send", "errno": "ENOMEM", "count": 1}},
      {"kind": "verbs_completion_delay", "target": {"rank": 1}, "at_ms": 16000,
       "duration_ms": 2000, "params": {"delay_ms": 1500, "count": 1}}
    ],
    "recovery_ms": 8000,
    "tolerance": 0.3,
    "gates": {"require_survival": true}
  })");
  int64_t id = 0;
  json run;
  withRelaunchesOnGuestPanic("the verbs-each-fault run", [&] {
    auto reply = httpRequest(port_, "POST", "/v1/runs", json{{"scenario", scenario}}.dump());
    ASSERT_EQ(reply.status, 202) << reply.body;
    id = reply.json()["id"].get<int64_t>();
    run = waitForFinalRun(id, 300);
  });
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(run.value("state", "") == "passed" || run.value("state", "") == "failed")
      << run.dump(2);
  const json events =
      httpRequest(port_, "GET", "/v1/runs/" + std::to_string(id) + "/events").json()["events"];
  ASSERT_EQ(eventsOfKind(events, "fault_applied").size(), 3u) << events.dump(1);
  ASSERT_EQ(eventsOfKind(events, "fault_reverted").size(), 3u) << events.dump(1);
  const std::vector<json> rank1 = peerLostOfRank(events, 1);
  bool flushed = false;
  bool post_failed = false;
  for (const json& lost : rank1) {
    flushed = flushed || lost.contains("wc_status");
    post_failed =
        post_failed || lost.value("message", "").find("ibv_post_send") != std::string::npos;
  }
  EXPECT_TRUE(flushed) << "rank 1 never reported a failed completion after its QP was moved to "
                       << "error\n"
                       << events.dump(1);
  EXPECT_TRUE(post_failed) << "rank 1 never reported the failed ibv_post_send\n" << events.dump(1);
  const json& steps = run["result"]["analysis"]["steps"];
  ASSERT_EQ(steps.size(), 3u) << run["result"].dump(1);
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_TRUE(steps[i]["recovered"].get<bool>()) << "step " << i << ": " << steps[i].dump(1);
  }
  // Held completions stall the ring for about the delay without breaking it.
  EXPECT_GE(steps[2]["longest_stall_ms"].get<double>(), 1000) << steps[2].dump(1);
  std::cout << "verbs-each-fault: score " << run["score"] << "\n";
  const char* names[] = {"qp_error", "post_fail", "completion_delay"};
  for (size_t i = 0; i < steps.size(); ++i) {
    std::cout << "  " << names[i] << ": longest stall " << steps[i]["longest_stall_ms"]
              << " ms, recovery " << steps[i]["time_to_recover_ms"] << " ms, retained "
              << steps[i]["retained"] << "\n";
  }
  for (const json& lost : rank1) std::cout << "  rank 1 peer_lost " << lost.dump() << "\n";
}

TEST_F(VmLabEndToEnd, AnAgentRevertsByItselfWhenTheControllerDies) {
  ConsoleWatcher vm1(*dir_ + "/state/vm/vm1.console.log", "FC_QDISC ");
  ASSERT_NE(vm1.waitFor([](const std::string& q) { return !q.empty(); }, 10000), 0);
  const std::string before = vm1.latest();
  const json scenario = {{"version", 1},
                         {"name", "vm-controller-dies"},
                         {"fabric", "vm-lab"},
                         {"workload", {{"message_bytes", 16384}, {"compute_ms", 5}}},
                         {"baseline_ms", 1000},
                         {"steps",
                          {{{"kind", "netem"},
                            {"target", {{"host", "vm1"}, {"side", "host"}}},
                            {"duration_ms", 120000},
                            {"params", {{"delay_ms", 10}}}}}},
                         {"recovery_ms", 1000}};
  auto reply = httpRequest(port_, "POST", "/v1/runs", json{{"scenario", scenario}}.dump());
  ASSERT_EQ(reply.status, 202) << reply.body;
  ASSERT_NE(vm1.waitFor(hasNetem, 120000), 0) << serve_->output();

  // serve's guardian (app/guardian.h) would revert through the agents as soon as serve died, so
  // kill it first, as when a whole cgroup goes: then only the agent's lease can undo the fault.
  const auto guardians = guardiansOf(*dir_);
  ASSERT_EQ(guardians.size(), 1u) << "serve runs with exactly one guardian";
  ASSERT_EQ(::kill(guardians[0], SIGKILL), 0);
  serve_->kill(SIGKILL);
  const int64_t killed_ns = steadyNowNs();
  const size_t console_mark = vm1.mark();
  const int64_t reverted_ns = vm1.waitFor([](const std::string& q) { return !hasNetem(q); }, 15000);
  ASSERT_NE(reverted_ns, 0) << "the agent never reverted; vm1 shows " << vm1.latest();
  const double after_ms = static_cast<double>(reverted_ns - killed_ns) / 1e6;
  EXPECT_EQ(vm1.latest(), before);

  // The agent itself says why, on vm1's console: "agent: reverted <id> (...): lease of 5000 ms
  // expired N ms ago (the controller stopped renewing it)".
  const auto said = vm1.waitForText("agent: reverted", console_mark, 5000);
  ASSERT_NE(said.seen_ns, 0) << "vm1's agent logged no revert after the kill";
  std::smatch lease;
  ASSERT_TRUE(std::regex_search(said.text, lease,
                                std::regex(R"(lease of ([0-9]+) ms expired ([0-9]+) ms ago)")))
      << "the revert was not the lease's: " << said.text;
  const double lease_ms = std::stod(lease[1]);
  const double late_ms = std::stod(lease[2]);
  std::cout << "controller and guardian killed; vm1 showed its qdisc restored " << after_ms
            << " ms later; vm1's agent: " << said.text.substr(said.text.find("agent: ")) << "\n";
  // Nobody else reverted: the guardian was dead before serve and left no log of a recovery.
  EXPECT_TRUE(guardiansOf(*dir_).empty());
  EXPECT_FALSE(std::filesystem::exists(*dir_ + "/fc.db.guardian.log"))
      << readFile(*dir_ + "/fc.db.guardian.log");
  // Lease expiry, by the clock: the controller renews every lease/3 (agent/remote_agent.h), so at
  // the kill between 2/3 of the lease and all of it was left. A revert seen sooner than that (less
  // 300 ms of slack) came from someone else: the old test saw the guardian's after ~1.8 s.
  EXPECT_GE(after_ms, lease_ms * 2 / 3 - 300) << "reverted before the lease could have expired";
  // The agent acts promptly once the lease is over (its lease manager ticks, under TCG)...
  EXPECT_LE(late_ms, 1000) << said.text;
  // ...and the guest's observer sees it within the lease plus 2.5 s: the revert itself, a `tc`
  // exec every 200 ms in a TCG guest, and the console file (6.2 s measured with a 5 s lease).
  EXPECT_LE(after_ms, lease_ms + 2500);
  serve_.reset();
}

// Last of the default cases: 2 % loss on RoCE makes Soft-RoCE retransmit hard, and once (CI,
// 6.12 guest) the slab it corrupted brought vm1 down with a double fault in rxe_receiver during
// the next test's baseline. Run after the others, it can only spoil itself.
TEST_F(VmLabEndToEnd, RoceLossCollapsesTheVerbsRingAndItRecoversAfterTheRevert) {
  // A guest kernel can die under retransmission ("Oops: double fault" in kmem_cache_alloc_node
  // from rxe_receiver; 2 of about 20 runs here, when the guests ran with 5-level paging, which
  // lab/vm_lab.cc now turns off): withRelaunchesOnGuestPanic.
  json run;
  withRelaunchesOnGuestPanic("the roce-loss run", [&] {
    ConsoleWatcher vm1(*dir_ + "/state/vm/vm1.console.log", "FC_QDISC ");
    const size_t from = vm1.mark();
    auto reply = httpRequest(port_, "POST", "/v1/runs", json{{"scenario", "roce-loss"}}.dump());
    ASSERT_EQ(reply.status, 202) << reply.body;
    run = waitForFinalRun(reply.json()["id"].get<int64_t>(), 240, &vm1);
    observed_netem_ = vm1.guestSpanOf(hasNetem, from);
  });
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(run.value("state", "") == "passed" || run.value("state", "") == "failed")
      << run.dump(2);
  ASSERT_TRUE(run["score"].is_number());
  EXPECT_EQ(run["scenario_document"]["workload"]["transport"], "verbs");

  const auto& analysis = run["result"]["analysis"];
  const auto& step = analysis["steps"][0];
  const double fault_start = step["fault_start_ms"].get<double>();
  const double fault_end = step["fault_end_ms"].get<double>();
  const double baseline_end = run["result"]["baseline"]["end_ms"].get<double>();
  // The stored window is the controller's view of when the loss was in force: from the apply's
  // reply (up to ~1.1 s after the scheduled apply while rxe keeps the single TCG vCPU busy) to
  // the revert's reply (out_of_force_ms of an at-once revert), which goes out at the scheduled
  // instant 4 s after the scheduled apply and came back up to 337 ms later under the same load.
  EXPECT_GE(fault_start, baseline_end - 1) << run["timeline"].dump(1);
  EXPECT_GE(fault_end, baseline_end + 4000 - 1) << run["timeline"].dump(1);
  EXPECT_LT(fault_end, baseline_end + 4000 + 1500) << run["timeline"].dump(1);
  EXPECT_GT(fault_end - fault_start, 2500) << run["timeline"].dump(1);
  // Cross-checked against vm1 itself. netem was on eth0 for at least the stored window (it was
  // there when the apply answered and still there when the revert was asked for) and at most
  // from the scheduled apply to the revert's event (after its reply). vm1's console brackets the
  // same span by the guest's clock: under rxe's load its print loop (a fork and exec of tc, then
  // 0.2 s of sleep) comes round only every ~1.3 s, so the bracket is wide, but it must overlap.
  // The host's read times are no measure: one CI run saw 5.6 s between them for a 4 s fault.
  double reverted_ms = -1;
  const json events =
      httpRequest(port_, "GET", "/v1/runs/" + std::to_string(run["id"].get<int64_t>()) + "/events")
          .json()["events"];
  for (const json& e : events) {
    if (e.value("kind", "") == "fault_reverted") reverted_ms = e.value("t_ms", -1.0);
  }
  ASSERT_GT(reverted_ms, fault_end) << run["timeline"].dump(1);
  ASSERT_TRUE(observed_netem_.has_value())
      << "vm1's console showed no stamped line before, during and after the netem";
  const double slack_ms = 100;  // /proc/uptime's 10 ms steps and two clocks read apart
  EXPECT_GE(observed_netem_->at_most_ms + slack_ms, fault_end - fault_start)
      << "vm1 saw netem for at most " << observed_netem_->at_most_ms << " ms";
  EXPECT_LE(observed_netem_->at_least_ms - slack_ms, reverted_ms - baseline_end)
      << "vm1 saw netem for at least " << observed_netem_->at_least_ms << " ms";
  // time_to_recover_ms is null when the ring never got back to 90 % of its baseline: say so
  // with the step, rather than fail on a JSON type error below.
  ASSERT_TRUE(step["recovered"].get<bool>()) << step.dump(1);
  auto samples =
      httpRequest(port_, "GET", "/v1/runs/" + std::to_string(run["id"].get<int64_t>()) + "/samples")
          .json();
  std::vector<double> during;
  std::vector<double> after;
  for (const auto& s : samples["samples"]) {
    const double start = s["start_ms"].get<double>();
    const double busbw = s["busbw_gbps"].get<double>();
    if (start > fault_start && start < fault_end) during.push_back(busbw);
    if (start > fault_end + step["time_to_recover_ms"].get<double>()) after.push_back(busbw);
  }
  const double baseline = analysis["baseline_busbw_gbps"].get<double>();
  const double worst = step["worst_busbw_gbps"].get<double>();
  const double longest_stall = step["longest_stall_ms"].get<double>();
  std::cout << "verbs busbw: baseline " << baseline << " GB/s, median under 2% loss "
            << median(during) << " GB/s, worst " << worst << " GB/s, longest stall "
            << longest_stall << " ms, median after recovery " << median(after) << " GB/s; retained "
            << step["retained"].get<double>() << ", recovery " << step["time_to_recover_ms"]
            << " ms, score " << run["score"].get<double>() << "; netem on vm1 for "
            << observed_netem_->at_least_ms << "-" << observed_netem_->at_most_ms
            << " ms by its clock, stored window " << fault_end - fault_start << " ms\n";
  // Go-back-N: 2 % loss costs RoCE far more than 2 % of its throughput. It shows as collectives
  // stalled on retransmission timeouts (the ones that complete between stalls run at full speed,
  // so their median says little): most of the progress is lost and the worst stall is long. The
  // worst completed iteration is a tenth of the baseline or less, unless hardly any completed:
  // then the stall itself covers most of the window.
  EXPECT_LT(step["retained"].get<double>(), 0.5) << step.dump();
  EXPECT_GT(longest_stall, 300) << step.dump();
  EXPECT_TRUE(worst < 0.1 * baseline || longest_stall > 0.5 * (fault_end - fault_start))
      << step.dump();
  // After the analysis's recovery point the ring runs near its baseline again. "Near" is wide:
  // under TCG the same ring's baseline ranged from 0.0017 to 0.0033 GB/s across 13 runs here, and
  // one run's guest slowed by 30 % between its baseline and its recovery window.
  ASSERT_FALSE(after.empty());
  EXPECT_GT(median(after), 0.6 * baseline);
}

// Last in the shared lab, and run on its own (ctest -L quarantine, tests/vm/CMakeLists.txt):
// Soft-RoCE in the 6.12 guests often does not come back from a port that went down under failing
// QPs (docs/verbs-faults.md, "Known problem"), and no other verbs test may inherit the wedged
// device.
TEST_F(VmLabEndToEnd, AnRdmaDeviceResetOnRank1IsSurvivedAndMeasured) {
  ConsoleWatcher rdma(*dir_ + "/state/vm/vm1.console.log", "FC_RDMA ");
  ASSERT_NE(rdma.waitFor([](const std::string& v) { return !v.empty(); }, 10000), 0);
  const std::string before = rdma.latest();
  ASSERT_NE(before.find("ACTIVE"), std::string::npos) << before;
  const size_t from = rdma.mark();
  auto reply =
      httpRequest(port_, "POST", "/v1/runs", json{{"scenario", "rdma-device-reset"}}.dump());
  ASSERT_EQ(reply.status, 202) << reply.body;
  const int64_t id = reply.json()["id"].get<int64_t>();
  const json run = waitForFinalRun(id, 240, &rdma);
  ASSERT_TRUE(run.value("state", "") == "passed" || run.value("state", "") == "failed")
      << run.dump(2);

  const double down_ms =
      rdma.spanOf([](const std::string& v) { return v.find("DOWN") != std::string::npos; }, from);
  EXPECT_GT(down_ms, 1000) << "vm1's console never showed rxe0's port down for the step";
  EXPECT_LT(down_ms, 8000);
  EXPECT_NE(rdma.waitFor([&](const std::string& v) { return v == before; }, 10000), 0)
      << "rxe0's port and GIDs are not back as they were: " << rdma.latest();
  const json events =
      httpRequest(port_, "GET", "/v1/runs/" + std::to_string(id) + "/events").json()["events"];
  printTimeline(events);
  ASSERT_EQ(eventsOfKind(events, "fault_applied").size(), 2u) << events.dump(1);
  ASSERT_EQ(eventsOfKind(events, "fault_reverted").size(), 2u) << events.dump(1);
  const std::vector<json> rank1 = peerLostOfRank(events, 1);
  ASSERT_FALSE(rank1.empty()) << "rank 1 did not report a lost peer\n" << events.dump(1);
  EXPECT_TRUE(rank1[0].contains("wc_status") || rank1[0].contains("cm_event")) << rank1[0].dump();
  const auto& step = run["result"]["analysis"]["steps"][0];
  ASSERT_TRUE(step["recovered"].get<bool>()) << step.dump(1);
  std::cout << "rdma-device-reset: port DOWN for " << down_ms << " ms on vm1's console; longest "
            << "stall " << step["longest_stall_ms"] << " ms, recovery "
            << step["time_to_recover_ms"] << " ms, score " << run["score"]
            << "; rank 1 first lost its peer: " << rank1[0].dump() << "\n";
}

// The verbs ring under each of the other verbs faults, one run, three steps on rank 1: a QP moved
// to error, a failing ibv_post_send, and completions held back 1.5 s. Each is what rank 1's own
// events say (a flushed completion, the post's errno, a stall without a lost peer), and each step
// is measured to its recovery.
}  // namespace
}  // namespace fabric_chaos::testing
