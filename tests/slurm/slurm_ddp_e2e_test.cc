// PyTorch DDP launched through Slurm, end to end through the REST API: a 4-host namespace lab with
// a Slurm cluster (`lab up --with-slurm`: slurmctld in a controller namespace, one slurmd per host
// namespace), `serve --allow-exec`, and the built-in ddp-link-flap-slurm scenario: the ranks are
// one srun job step, our agents take h1's cable down.
// Independent of the product: Slurm's own view (squeue while the run is on, its job completion
// record afterwards, squeue empty once the run ends or is aborted), the script's own CSV log of
// every step against the samples the run stored, and `ip netns pids` for what is left running.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include "tests/privileged/step_log.h"
#include "tests/privileged/support.h"

namespace fabric_chaos::testing {
namespace {

using nlohmann::json;

constexpr char kPrefix[] = "fcl";
constexpr char kController[] = "fcl-slurmctl";

// Empty when the machine has what the tier needs.
std::string missingTools() {
  for (const char* tool : {"slurmctld", "slurmd", "srun", "squeue", "munged"}) {
    if (runShell(std::string("command -v ") + tool + " >/dev/null 2>&1").exit_code != 0) {
      return std::string(tool) + " is not installed (deploy/install-deps.sh: slurm-wlm, munge)";
    }
  }
  if (runShell("/usr/bin/python3 -c 'import torch' 2>/dev/null").exit_code != 0) {
    return "python3-torch is not installed (deploy/install-deps.sh)";
  }
  return "";
}

// One lab with Slurm and one serve for the whole tier: bringing the cluster up is the slow part.
class SlurmDdpEndToEnd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!missingPrivilegedPrerequisite().empty() || !missingTools().empty()) return;
    dir_ = makeTempDir();
    const std::string binary = std::getenv("FC_BINARY");
    const auto up =
        runShell(binary + " lab up --hosts 4 --with-slurm --state-dir " + dir_ + "/state 2>&1");
    if (up.exit_code != 0) {
      setup_error_ = "lab up --with-slurm failed:\n" + up.out;
      return;
    }
    lab_output_ = up.out;
    serve_ = std::make_unique<ServeProcess>(std::vector<std::string>{"--allow-exec"}, dir_);
    port_ = serve_->waitForPort(60000);
    if (port_ <= 0) setup_error_ = "serve did not start:\n" + serve_->output();
  }

  static void TearDownTestSuite() {
    if (serve_) serve_->stop(30000);
    serve_.reset();
    if (!dir_.empty()) {
      const std::string binary = std::getenv("FC_BINARY");
      runShell(binary + " lab down --state-dir " + dir_ + "/state >/dev/null 2>&1");
      std::filesystem::remove_all(dir_);
    }
  }

  void SetUp() override {
    FC_REQUIRE_ROOT();
    if (const std::string missing = missingTools(); !missing.empty()) {
      const char* ci = std::getenv("CI");
      if (ci != nullptr && std::string(ci) == "true") FAIL() << missing;
      GTEST_SKIP() << missing;
    }
    ASSERT_TRUE(setup_error_.empty()) << setup_error_;
    ASSERT_GT(port_, 0);
    setDefaultBearerToken(serve_->token());
  }

  // squeue in the controller namespace, with the lab's configuration: "JOBNAME STATE NODES" lines.
  static std::string squeue() {
    return runShell("SLURM_CONF=" + dir_ +
                    "/state/slurm/netns-lab/slurm.conf nsenter --net=/run/netns/" + kController +
                    " squeue -h -o '%j %T %N' 2>&1")
        .out;
  }

  // Python processes (the DDP ranks) left in the lab's host namespaces.
  static int pythonsInHosts() {
    int count = 0;
    for (int i = 0; i < 4; ++i) {
      count += std::atoi(runShell("for p in $(ip netns pids " + std::string(kPrefix) + "-h" +
                                  std::to_string(i) +
                                  "); do cat /proc/$p/comm 2>/dev/null; done | grep -c python")
                             .out.c_str());
    }
    return count;
  }

  json scenarioWithLog(std::vector<std::string> extra_args = {}) {
    json scenario = httpRequest(port_, "GET", "/v1/scenarios/ddp-link-flap-slurm").json();
    if (scenario.contains("scenario")) scenario = scenario["scenario"];
    std::vector<std::string> args = {"--log", dir_ + "/steps-rank{rank}.csv"};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    scenario["workload"]["args"] = args;
    scenario["name"] = "ddp-link-flap-slurm-logged";
    return scenario;
  }

  static std::string dir_;
  static std::string setup_error_;
  static std::string lab_output_;
  static std::unique_ptr<ServeProcess> serve_;
  static int port_;
};

std::string SlurmDdpEndToEnd::dir_;
std::string SlurmDdpEndToEnd::setup_error_;
std::string SlurmDdpEndToEnd::lab_output_;
std::unique_ptr<ServeProcess> SlurmDdpEndToEnd::serve_;
int SlurmDdpEndToEnd::port_ = 0;

// Watches squeue until stopped: every "JOBNAME STATE NODES" line it saw.
class SqueueWatcher {
 public:
  explicit SqueueWatcher(std::function<std::string()> read) : read_(std::move(read)) {
    thread_ = std::thread([this] {
      while (!stop_) {
        std::string out = read_();
        {
          std::lock_guard lock(mu_);
          size_t start = 0;
          for (size_t nl; (nl = out.find('\n', start)) != std::string::npos; start = nl + 1) {
            seen_.insert(out.substr(start, nl - start));
          }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
      }
    });
  }
  ~SqueueWatcher() { stop(); }
  std::set<std::string> stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  std::function<std::string()> read_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::set<std::string> seen_;
};

TEST_F(SlurmDdpEndToEnd, AnOutageStallsTheSrunLaunchedJobAndSlurmSeesItsStepEnd) {
  LinkObserver cable("fcl-sw0", "p1");
  SqueueWatcher watcher([] { return squeue(); });
  const int64_t id = startRun(port_, scenarioWithLog());
  ASSERT_GT(id, 0);
  const json run = waitForFinalRun(port_, id, 240);
  const auto seen = watcher.stop();
  const auto changes = cable.stop();
  ASSERT_TRUE(run.value("state", "") == "passed" || run.value("state", "") == "failed")
      << run.dump(2);
  const std::string job = "fabric-chaos-run-" + std::to_string(id);

  // Slurm ran the job on the four host nodes while the run was on, and nothing is queued now.
  EXPECT_TRUE(seen.count(job + " RUNNING h[0-3]") == 1)
      << "squeue never showed " << job << " RUNNING on h[0-3]; saw:\n"
      << [&] {
           std::string all;
           for (const auto& line : seen) all += line + "\n";
           return all;
         }();
  EXPECT_EQ(squeue(), "");
  // Its completion record (jobcomp/filetxt: one line per job) says it completed on those nodes.
  const std::string records = readFile(dir_ + "/state/slurm/netns-lab/log/jobcomp.txt");
  const size_t at = records.find(" Name=" + job + " ");
  ASSERT_NE(at, std::string::npos) << records;
  const std::string record = records.substr(at, records.find('\n', at) - at);
  EXPECT_NE(record.find("JobState=COMPLETED"), std::string::npos) << record;
  EXPECT_NE(record.find("NodeList=h[0-3]"), std::string::npos) << record;

  // The run's events name the launcher and the job.
  json events =
      httpRequest(port_, "GET", "/v1/runs/" + std::to_string(id) + "/events").json()["events"];
  const auto started = eventsOfKind(events, "workload_started");
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0]["detail"]["launcher"], "slurm");
  EXPECT_EQ(started[0]["detail"]["slurm_job"], job);

  // The cable went down for 10 s (ip), and the script's own log shows training stalled longer.
  const int64_t origin_ns = run["attributes"]["clock_origin_steady_ns"].get<int64_t>();
  double down_ms = -1, up_ms = -1;
  for (const auto& c : changes) {
    const double t = static_cast<double>(c.t_ns - origin_ns) / 1e6;
    if (!c.admin_up && down_ms < 0) down_ms = t;
    if (c.admin_up && down_ms >= 0 && up_ms < 0) up_ms = t;
  }
  ASSERT_GE(down_ms, 0);
  EXPECT_NEAR(up_ms - down_ms, 10000, 200);
  const auto rank1 = readStepLog(dir_ + "/steps-rank1.csv");
  const double stall_ms = longestGapMs(rank1);
  EXPECT_GT(stall_ms, 10000) << "training went on through a 10 s outage of its ring";
  EXPECT_LT(stall_ms, 40000);

  // The samples that came back through srun are the script's steps: same steps, same durations,
  // and the same instants once moved from the nodes' wall clock to the run's clock (1 ms: the two
  // clock offsets are read at slightly different moments on either side of srun).
  const json samples =
      httpRequest(port_, "GET", "/v1/runs/" + std::to_string(id) + "/samples").json();
  for (int rank = 0; rank < 4; ++rank) {
    const auto logged = readStepLog(dir_ + "/steps-rank" + std::to_string(rank) + ".csv");
    ASSERT_GT(logged.size(), 10u) << "rank " << rank;
    int compared = 0;
    double worst_ms = 0;
    for (const json& s : samples["samples"]) {
      if (s["rank"] != rank) continue;
      const auto it = logged.find(s["iteration"].get<int64_t>());
      ASSERT_NE(it, logged.end()) << s.dump();
      const double logged_ms = (it->second.t_start_s * 1e9 - static_cast<double>(origin_ns)) / 1e6;
      worst_ms = std::max(worst_ms, std::abs(s["start_ms"].get<double>() - logged_ms));
      EXPECT_NEAR(s["duration_ms"].get<double>(), it->second.duration_ms, 0.002) << s.dump();
      ++compared;
    }
    EXPECT_LT(worst_ms, 1.0) << "rank " << rank;
    EXPECT_GE(compared + 20, static_cast<int>(logged.size())) << "rank " << rank;
    std::cout << "rank " << rank << ": " << compared << " samples match the script's log, worst "
              << "start difference " << worst_ms << " ms\n";
  }
  const json& step = run["result"]["analysis"]["steps"][0];
  EXPECT_TRUE(step["survived"].get<bool>()) << step.dump(2);
  EXPECT_NEAR(step["longest_stall_ms"].get<double>(), stall_ms, 1500) << step.dump(2);
  EXPECT_EQ(pythonsInHosts(), 0);
  EXPECT_TRUE(httpRequest(port_, "GET", "/v1/faults").json()["faults"].empty());
  std::cout << "ddp-link-flap-slurm: job " << job << "; cable down " << down_ms << " ms, up "
            << up_ms << " ms; rank 1's longest gap " << stall_ms << " ms; run: score "
            << run["score"] << ", longest stall " << step["longest_stall_ms"] << " ms, retained "
            << step["retained"] << "\n";
}

TEST_F(SlurmDdpEndToEnd, AnAbortCancelsTheStepAndLeavesNothingRunning) {
  const int64_t id = startRun(port_, scenarioWithLog());
  ASSERT_GT(id, 0);
  const std::string job = "fabric-chaos-run-" + std::to_string(id);
  // Abort once the job trains (its first samples are in) and the fault is on.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  std::string state;
  while (std::chrono::steady_clock::now() < deadline) {
    state = httpRequest(port_, "GET", "/v1/runs/" + std::to_string(id)).json().value("state", "");
    if (state == "injecting" || state == "error" || state == "failed") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_EQ(state, "injecting");
  ASSERT_NE(squeue().find(job + " RUNNING"), std::string::npos) << squeue();
  const auto abort_at = std::chrono::steady_clock::now();
  ASSERT_EQ(httpRequest(port_, "POST", "/v1/runs/" + std::to_string(id) + "/abort").status, 202);
  const json run = waitForFinalRun(port_, id, 60);
  EXPECT_EQ(run.value("state", ""), "aborted") << run.dump(2);
  // Slurm no longer has it, and no rank runs in any host namespace.
  std::string queue = squeue();
  for (int i = 0; i < 40 && !queue.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    queue = squeue();
  }
  EXPECT_EQ(queue, "");
  const double gone_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - abort_at).count();
  EXPECT_EQ(pythonsInHosts(), 0);
  EXPECT_TRUE(httpRequest(port_, "GET", "/v1/faults").json()["faults"].empty());
  std::cout << "abort: run aborted and Slurm's queue empty " << gone_s << " s after the request\n";
}

TEST_F(SlurmDdpEndToEnd, AStepSlurmRefusesFailsTheRunWithSlurmsWords) {
  json scenario = scenarioWithLog();
  scenario["workload"]["slurm"]["partition"] = "nosuchpartition";
  const int64_t id = startRun(port_, scenario);
  ASSERT_GT(id, 0);
  const json run = waitForFinalRun(port_, id, 60);
  EXPECT_NE(run.value("state", ""), "passed") << run.dump(2);
  EXPECT_NE(run.dump().find("Invalid partition name"), std::string::npos) << run.dump(2);
  EXPECT_EQ(squeue(), "");
}

}  // namespace
}  // namespace fabric_chaos::testing
