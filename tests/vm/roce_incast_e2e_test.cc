// The built-in roce-incast scenario on the VM lab, end to end through the REST API: three Debian
// 6.12 guests with Soft-RoCE, each running this binary as its agent, the switch's ports modelled
// at 40 Mbit/s with 64 KiB buffers. vm0 and vm2 write RDMA into vm1 while a verbs ring runs on
// vm0 and vm1; the incast is cut into three parts, one per guest's agent.
// Observed from outside the product:
// - the switch namespace's `tc -s` counters on vm1's port (drops there, and only there);
// - perftest: a rate-bounded ib_send_bw from vm2 into vm1, looping in the guests beside our
//   generators and printing each run's bandwidth on vm2's console, which collapses during the
//   incast as the ring does, and comes back after it (so nothing of the incast was left running);
// - a shell loop on vm1 printing rxe0's hw_counters on its console once a second, against which
//   the run's own RDMA telemetry (read by vm1's agent) is checked.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "tests/privileged/support.h"
#include "tests/vm/vm_support.h"

namespace fabric_chaos::testing {
namespace {

using nlohmann::json;

// The observer: on vm1 an ib_send_bw server that starts again after each run; on vm2 a client
// that runs 100 sends of 16 KiB with one in flight (16 KiB never overflows the 64 KiB buffer, so
// alone it sees no drop) and prints "FC_PERF <bytes> <iterations> <peak> <average MB/s> ...".
// A run that does not finish prints nothing.
// ib_write_bw would be the closer twin of our generator, but it cannot sleep on completion events
// (-e), and a busy-polling observer would take a TCG guest's only vCPU from the ring.
// Either end of a run that the incast stalls for good (its QP given up, or the other end gone) is
// killed after 15 s and the loop goes on: a stuck observer must not end the observation.
constexpr char kObserver[] =
    "case $(hostname) in "
    "vm1) (while :; do timeout 15 ib_send_bw -d rxe0 -R -s 16384 -n 100 -t 1 -e -p 18515 "
    ">/dev/null 2>&1; done &) ;; "
    "vm2) (sleep 5; while :; do timeout 15 ib_send_bw -d rxe0 -R -s 16384 -n 100 -t 1 -e -p 18515 "
    "10.201.0.2 2>&1 | grep -A1 'BW average' | tail -n1 | sed 's/^/FC_PERF /'; sleep 0.3; "
    "done &) ;; "
    "esac; "
    "[ $(hostname) = vm1 ] && (c=/sys/class/infiniband/rxe0/ports/1/hw_counters; while :; do "
    "echo \"FC_RXE $(cat $c/rcvd_pkts) $(cat $c/out_of_seq_request)\"; sleep 1; done &); ";

// vm1's rxe0 counters as its console showed them: when the line was read, rcvd_pkts and
// out_of_seq_request.
struct RxeReading {
  int64_t wall_ms;
  int64_t rcvd_pkts;
  int64_t out_of_seq_request;
};

std::vector<RxeReading> rxeReadings(ConsoleWatcher& console) {
  console.poll();
  std::vector<RxeReading> out;
  for (const auto& line : console.watched()) {
    std::istringstream in(line.text);
    RxeReading r{line.seen_wall_ms, -1, -1};
    if (in >> r.rcvd_pkts >> r.out_of_seq_request) out.push_back(r);
  }
  return out;
}

// One observer run: when its line was read, the average bandwidth it printed, and so when its
// transfer began (its bytes at that bandwidth before the line).
struct ObserverRun {
  int64_t wall_ms;
  double mb_per_s;
  int64_t began_wall_ms;
};

std::vector<ObserverRun> observerRuns(ConsoleWatcher& console) {
  std::vector<ObserverRun> runs;
  for (const auto& line : console.watched()) {
    std::istringstream fields(line.text);
    double bytes = 0, iterations = 0, peak = 0, average = -1;
    if (fields >> bytes >> iterations >> peak >> average && average > 0) {
      const double transfer_ms = bytes * iterations / (average * 1e6) * 1000.0;
      runs.push_back(
          {line.seen_wall_ms, average, line.seen_wall_ms - static_cast<int64_t>(transfer_ms)});
    }
  }
  return runs;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

int64_t portDrops(const std::string& port) {
  const json stats = qdiscStats("fcv-sw0", port, "1:");  // the port's root: every class's drops
  return stats.is_object() ? stats.value("drops", int64_t{0}) : -1;
}

class RoceIncastEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    FC_REQUIRE_ROOT();
    FC_REQUIRE(missingVmPrerequisite());
    FC_REQUIRE(runShell("command -v ib_send_bw >/dev/null").exit_code == 0
                   ? ""
                   : "perftest (ib_send_bw) is not installed (deploy/install-deps.sh)");
    dir_ = makeTempDir();
    binary_ = std::getenv("FC_BINARY");
    launchLab();
    ASSERT_TRUE(lab_up_) << lab_output_;
    serve_ = std::make_unique<ServeProcess>(std::vector<std::string>{}, dir_);
    port_ = serve_->waitForPort(30000);
    ASSERT_GT(port_, 0) << serve_->output();
  }

  void TearDown() override {
    if (serve_) serve_->stop(30000);
    if (HasFailure()) keepEvidence();
    if (!dir_.empty()) {
      runShell(binary_ + " lab down --kind vm --state-dir " + dir_ + "/state >/dev/null 2>&1");
      EXPECT_TRUE(namespacesWithPrefix("fcv-").empty()) << "the VM lab left namespaces behind";
      std::filesystem::remove_all(dir_);
    }
  }

  void launchLab() {
    const std::string state = dir_ + "/state";
    const std::string agent = std::string(kObserver) + "exec " + binary_ +
                              " agent --listen 0.0.0.0:7070 --token-file " + state +
                              "/vm/agent.token --allow eth0 --mgmt-if eth1";
    auto up = runShell(binary_ + " lab up --kind vm --hosts 3 --link-rate 40mbit --buffer 64k " +
                       "--state-dir " + state + " --agent-command " + shellQuoted(agent) + " 2>&1");
    lab_up_ = up.exit_code == 0;
    lab_output_ = up.out;
  }

  void relaunchLab() {
    if (serve_) serve_->stop(30000);
    serve_.reset();
    runShell(binary_ + " lab down --kind vm --state-dir " + dir_ + "/state >/dev/null 2>&1");
    launchLab();
    ASSERT_TRUE(lab_up_) << lab_output_;
    serve_ = std::make_unique<ServeProcess>(std::vector<std::string>{}, dir_);
    port_ = serve_->waitForPort(30000);
    ASSERT_GT(port_, 0) << serve_->output();
  }

  // The guests' consoles and serve's output go to $FC_ARTIFACTS/roce_incast_e2e/.
  void keepEvidence(const std::string& suffix = "") {
    const char* artifacts = std::getenv("FC_ARTIFACTS");
    if (artifacts == nullptr || dir_.empty()) return;
    const std::filesystem::path to = std::filesystem::path(artifacts) / "roce_incast_e2e" /
                                     (suffix.empty() ? std::string("failure") : suffix);
    std::error_code ec;
    std::filesystem::create_directories(to, ec);
    for (const char* vm : {"vm0", "vm1", "vm2"}) {
      std::filesystem::copy_file(dir_ + "/state/vm/" + vm + ".console.log",
                                 to / (std::string(vm) + ".console.log"),
                                 std::filesystem::copy_options::overwrite_existing, ec);
    }
    if (serve_) std::ofstream(to / "serve.log") << serve_->output();
    std::cerr << "roce_incast_e2e: guest consoles and serve's output kept in " << to << "\n";
  }

  json waitForFinal(int64_t id, int timeout_s, std::vector<ConsoleWatcher*> consoles) {
    const int64_t deadline = steadyNowNs() + int64_t{timeout_s} * 1000000000;
    json run;
    while (steadyNowNs() < deadline) {
      // So that each observer line is stamped when the guest printed it.
      for (ConsoleWatcher* console : consoles) console->poll();
      run = httpRequest(port_, "GET", "/v1/runs/" + std::to_string(id)).json();
      const std::string state = run.value("state", "");
      if (state == "passed" || state == "failed" || state == "error" || state == "aborted") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return run;
  }

  std::string dir_;
  std::string binary_;
  bool lab_up_ = false;
  std::string lab_output_;
  std::unique_ptr<ServeProcess> serve_;
  int port_ = 0;
};

TEST_F(RoceIncastEndToEnd, TheVerbsRingAndPerftestCollapseTogetherAndComeBackAfterTheRevert) {
  json run;
  int64_t id = 0;
  std::unique_ptr<ConsoleWatcher> vm2;
  int64_t drops_before = 0;
  std::map<std::string, int64_t> other_drops_before;
  std::unique_ptr<ConsoleWatcher> vm1;
  for (int attempt = 1;; ++attempt) {
    vm2 = std::make_unique<ConsoleWatcher>(dir_ + "/state/vm/vm2.console.log", "FC_PERF ");
    vm1 = std::make_unique<ConsoleWatcher>(dir_ + "/state/vm/vm1.console.log", "FC_RXE ");
    // The observer must be running before the run starts: its baseline is what collapses.
    ASSERT_NE(vm2->waitFor([](const std::string&) { return true; }, 60000), 0)
        << "vm2 printed no ib_send_bw result";
    vm1->poll();  // vm1's counters so far: read before the run
    drops_before = portDrops("fcv-tap1");
    for (const char* port : {"fcv-tap0", "fcv-tap2"}) other_drops_before[port] = portDrops(port);
    auto reply = httpRequest(port_, "POST", "/v1/runs", json{{"scenario", "roce-incast"}}.dump());
    ASSERT_EQ(reply.status, 202) << reply.body;
    id = reply.json()["id"].get<int64_t>();
    run = waitForFinal(id, 300, {vm2.get(), vm1.get()});
    const std::string panicked = panickedGuest(dir_ + "/state", {"vm0", "vm1", "vm2"});
    if (panicked.empty()) break;
    // The lab's kernel failing, not the product (vm_e2e_test says more): once, it is retried.
    keepEvidence("attempt" + std::to_string(attempt));
    ASSERT_EQ(attempt, 1) << panicked << "'s kernel panicked again: "
                          << guestPanicLine(dir_ + "/state", panicked);
    std::cout << "roce_incast_e2e: " << panicked << " panicked ("
              << guestPanicLine(dir_ + "/state", panicked) << "); relaunching the lab\n";
    relaunchLab();
  }
  ASSERT_TRUE(run.value("state", "") == "passed" || run.value("state", "") == "failed")
      << run.dump(2);
  ASSERT_TRUE(run["score"].is_number()) << run.dump(2);

  // The three parts: the sink on vm1's agent, the sources on vm0's and vm2's, each applied and
  // reverted, with its own wall-clock stamps.
  auto events =
      httpRequest(port_, "GET", "/v1/runs/" + std::to_string(id) + "/events").json()["events"];
  std::vector<json> applied = eventsOfKind(events, "fault_applied");
  std::vector<json> reverted = eventsOfKind(events, "fault_reverted");
  ASSERT_EQ(applied.size(), 3u) << events.dump(1);
  ASSERT_EQ(reverted.size(), 3u) << events.dump(1);
  int64_t applied_wall = 0;
  int64_t reverted_wall = std::numeric_limits<int64_t>::max();
  for (const json& e : applied) applied_wall = std::max(applied_wall, e["wall_ms"].get<int64_t>());
  for (const json& e : reverted) {
    reverted_wall = std::min(reverted_wall, e["wall_ms"].get<int64_t>());
  }
  ASSERT_LT(applied_wall, reverted_wall);

  // The run's own account: the ring collapsed, the aggressors got through, vm1's port dropped.
  const json& step = run["result"]["analysis"]["steps"][0];
  const double retained = step["retained"].get<double>();
  const json& aggressors = step["aggressors"];
  ASSERT_EQ(aggressors["goodput_mbps"].size(), 2u) << step.dump(1);
  for (const json& goodput : aggressors["goodput_mbps"]) EXPECT_GT(goodput.get<double>(), 0);
  const json& hottest = step["hottest_queue"];
  ASSERT_TRUE(hottest.is_object()) << "no switch telemetry in the step: " << step.dump(1);
  EXPECT_EQ(hottest["source"], "sw0/fcv-tap1/best_effort") << step.dump(1);
  EXPECT_GT(hottest["drops"].get<int64_t>(), 0) << step.dump(1);
  EXPECT_LT(retained, 0.6) << step.dump(1);  // 0.09-0.46 in five runs here
  EXPECT_GT(step["p99_slowdown"].get<double>(), 2) << step.dump(1);

  // tc, in the switch's namespace: vm1's port dropped at least what the run's telemetry counted
  // during the step (the observer adds its own), and the other ports, which carry no incast, none.
  const int64_t drops = portDrops("fcv-tap1") - drops_before;
  EXPECT_GE(drops, hottest["drops"].get<int64_t>());
  for (const auto& [port, before] : other_drops_before) {
    EXPECT_EQ(portDrops(port) - before, 0) << port;
  }

  // perftest, beside it: its bandwidth before the incast, during it (runs that ended in the
  // window, or none at all), and after it. The run ends 10 s after the revert; the observer gets
  // up to a minute more for its runs after it.
  const auto after_revert = [&] {
    std::vector<double> out;
    for (const ObserverRun& r : observerRuns(*vm2)) {
      if (r.wall_ms > reverted_wall + 4000) out.push_back(r.mb_per_s);
    }
    return out;
  };
  // Five runs after the revert: one run moves 1.6 MB, and a TCG guest's scheduling alone can
  // halve one run's figure, so "it came back" is the best of five (the best of three once read
  // 4.49 MB/s against a 9.6 MB/s baseline, the first runs still slow after the incast).
  const int64_t give_up = steadyNowNs() + 60'000'000'000;
  while (after_revert().size() < 5 && steadyNowNs() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  // "During" holds only runs whose whole transfer lay inside the incast: a run that ends just
  // after the apply, or spans the revert, mostly measured the uncongested port.
  std::vector<double> before, during;
  for (const ObserverRun& r : observerRuns(*vm2)) {
    if (r.wall_ms < applied_wall) before.push_back(r.mb_per_s);
    if (r.began_wall_ms >= applied_wall && r.wall_ms <= reverted_wall) {
      during.push_back(r.mb_per_s);
    }
  }
  const std::vector<double> after = after_revert();
  const double during_worst =
      during.empty() ? 0.0 : *std::min_element(during.begin(), during.end());
  const double after_best = after.empty() ? 0.0 : *std::max_element(after.begin(), after.end());
  std::cout << "roce-incast: ring retained " << retained << ", p99 x" << step["p99_slowdown"]
            << ", vm1's port dropped " << drops << " (tc), aggressors " << aggressors["total_mbps"]
            << " Mbit/s (Jain " << aggressors["jain_fairness"] << "); ib_send_bw MB/s: before "
            << median(before) << " (" << before.size() << " runs), during worst " << during_worst
            << " (" << during.size() << " runs inside the incast), after best " << after_best
            << " (" << after.size() << " runs)\n";
  ASSERT_GE(before.size(), 1u) << "no ib_send_bw run ended before the incast";
  ASSERT_GE(after.size(), 5u) << "ib_send_bw printed too little after the revert";
  // The baseline is at most what vm1's port sends: the lab models it at 40 Mbit/s (5 MB/s), yet
  // runs before the incast read up to 9.6 MB/s (a short run can beat the modelled rate), while
  // every run after it read 4.45-4.5 MB/s, the line.
  constexpr double kPortMBps = 40e6 / 8 / 1e6;
  const double baseline = std::min(median(before), kPortMBps);
  EXPECT_LT(during_worst, 0.5 * baseline) << "perftest did not see the collapse";
  EXPECT_GT(after_best, 0.5 * baseline) << "perftest did not come back after the revert";
  EXPECT_TRUE(httpRequest(port_, "GET", "/v1/faults").json()["faults"].empty());

  // The run's RDMA telemetry (vm1's agent reading rxe0's hw_counters every 500 ms), against the
  // guest's own shell reading them once a second: bracketed by what the shell saw before the run
  // started and after it ended, and the incast's drops at vm1's port show up as out-of-sequence
  // requests at vm1's responder while the incast was in force.
  auto series = [&](const std::string& metric) {
    const json reply = httpRequest(port_, "GET",
                                   "/v1/runs/" + std::to_string(id) +
                                       "/telemetry?source=rdma/vm1/rxe0/1&metric=" + metric)
                           .json();
    return reply["series"].empty() ? json() : reply["series"][0];
  };
  const json rcvd = series("rcvd_pkts");
  const json out_of_seq = series("out_of_seq_request");
  ASSERT_TRUE(rcvd.is_object()) << "no RDMA telemetry from vm1";
  EXPECT_EQ(rcvd["type"], "rdma_port");
  ASSERT_TRUE(out_of_seq.is_object());
  const size_t readings = rcvd["values"].size();
  EXPECT_GE(readings, 15u) << "every 500 ms over a run of more than 20 s";
  for (size_t i = 1; i < readings; ++i) {
    ASSERT_GE(rcvd["values"][i].get<int64_t>(), rcvd["values"][i - 1].get<int64_t>());
  }
  int64_t run_started_wall = 0;
  int64_t run_finished_wall = 0;
  for (const json& t : run["transitions"]) {
    if (t["state"] == "baseline" && run_started_wall == 0) run_started_wall = t["wall_ms"];
    run_finished_wall = t["wall_ms"];
  }
  // The observer traffic never stops, so rcvd_pkts only grows: the last line read bounds every
  // telemetry reading from above. Not the first line after the end: the serial console of a TCG
  // guest can hold lines back for seconds, so a line read after the end may predate the agent's
  // last reading (CI saw 51295 read 1.2 s after the end against a final reading of 51359).
  std::this_thread::sleep_for(std::chrono::milliseconds(4000));
  const std::vector<RxeReading> shell = rxeReadings(*vm1);
  std::optional<RxeReading> before_run, after_run;
  for (const RxeReading& r : shell) {
    // A line is read after the guest printed it, so one read before the start was printed before.
    if (r.wall_ms < run_started_wall - 200) before_run = r;
    if (r.wall_ms > run_finished_wall + 2000) after_run = r;
  }
  ASSERT_TRUE(before_run && after_run) << shell.size() << " FC_RXE lines on vm1's console";
  EXPECT_GE(rcvd["values"][0].get<int64_t>(), before_run->rcvd_pkts);
  EXPECT_LE(rcvd["values"][readings - 1].get<int64_t>(), after_run->rcvd_pkts);
  auto valueAt = [](const json& s, double t_ms) {  // the last reading at or before t_ms
    int64_t value = s["values"][0].get<int64_t>();
    for (size_t i = 0; i < s["t_ms"].size() && s["t_ms"][i].get<double>() <= t_ms; ++i) {
      value = s["values"][i].get<int64_t>();
    }
    return value;
  };
  double applied_t = 0, reverted_t = 0;
  for (const json& e : applied) applied_t = std::max(applied_t, e["t_ms"].get<double>());
  reverted_t = reverted[0]["t_ms"].get<double>();
  const int64_t seq_errors = valueAt(out_of_seq, reverted_t) - valueAt(out_of_seq, applied_t);
  std::cout << "roce-incast: vm1 rxe0 telemetry " << readings << " readings, rcvd_pkts "
            << rcvd["values"][0] << " -> " << rcvd["values"][readings - 1]
            << " (shell: " << before_run->rcvd_pkts << " before, " << after_run->rcvd_pkts
            << " after), out_of_seq_request +" << seq_errors
            << " during the incast (shell: " << before_run->out_of_seq_request << " -> "
            << after_run->out_of_seq_request << ")\n";
  EXPECT_GT(seq_errors, 0) << "vm1's port dropped " << drops << " packets, rxe0 saw no gap";
  EXPECT_LE(seq_errors, after_run->out_of_seq_request - before_run->out_of_seq_request);
}

}  // namespace
}  // namespace fabric_chaos::testing
