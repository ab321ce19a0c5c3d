// A real training framework through faults, end to end through the REST API: PyTorch DDP over gloo
// (Debian's python3-torch, the shipped pytorch-ddp script, one rank per namespace of a 4-host lab
// under `serve --with-lab 4 --allow-exec`), the built-in ddp-link-flap and ddp-packet-loss
// scenarios, and a rank death from gloo's own timeout.
// Independent of the product: the script's own CSV log of every step (written by the script, not
// parsed by fabric-chaos) against the samples the run stored, and `ip` watching the cable.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "tests/privileged/step_log.h"
#include "tests/privileged/support.h"

namespace fabric_chaos::testing {
namespace {

using nlohmann::json;

class DdpEndToEnd : public ServeWithLabTest {
 protected:
  DdpEndToEnd() : ServeWithLabTest(4, {"--allow-exec"}) {}

  void SetUp() override {
    const bool have_torch =
        runShell("/usr/bin/python3 -c 'import torch' 2>/dev/null").exit_code == 0;
    if (!have_torch) {
      const char* ci = std::getenv("CI");
      if (ci != nullptr && std::string(ci) == "true") {
        FAIL() << "python3-torch is not installed (deploy/install-deps.sh)";
      }
      GTEST_SKIP() << "python3-torch is not installed (deploy/install-deps.sh)";
    }
    ServeWithLabTest::SetUp();
  }

  // A built-in scenario with the script's own log turned on (and more arguments), as a run body.
  json scenarioWithLog(const std::string& name, std::vector<std::string> extra_args = {}) {
    json scenario = httpRequest(port_, "GET", "/v1/scenarios/" + name).json();
    if (scenario.contains("scenario")) scenario = scenario["scenario"];
    std::vector<std::string> args = {"--log", dir_ + "/steps-rank{rank}.csv"};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    scenario["workload"]["args"] = args;
    scenario["name"] = name + "-logged";
    return scenario;
  }

  json samplesOf(int64_t id) {
    return httpRequest(port_, "GET", "/v1/runs/" + std::to_string(id) + "/samples").json();
  }
};

// What the parser stored is what the script logged: the same steps, at the same instants on the
// run's clock, with the same durations, for every rank.
void expectSamplesMatchTheScriptsLog(const json& samples, int64_t origin_ns, const std::string& dir,
                                     int ranks) {
  for (int rank = 0; rank < ranks; ++rank) {
    const auto logged = readStepLog(dir + "/steps-rank" + std::to_string(rank) + ".csv");
    ASSERT_GT(logged.size(), 10u) << "rank " << rank << " logged almost nothing";
    int compared = 0;
    for (const json& s : samples["samples"]) {
      if (s["rank"] != rank) continue;
      const auto it = logged.find(s["iteration"].get<int64_t>());
      ASSERT_NE(it, logged.end()) << "rank " << rank << " sample " << s.dump()
                                  << " is not in the script's log";
      const double logged_start_ms =
          (it->second.t_start_s * 1e9 - static_cast<double>(origin_ns)) / 1e6;
      EXPECT_NEAR(s["start_ms"].get<double>(), logged_start_ms, 0.01) << s.dump();
      EXPECT_NEAR(s["duration_ms"].get<double>(), it->second.duration_ms, 0.002) << s.dump();
      ++compared;
    }
    // The script logs the steps it finished after its last flush too; fabric-chaos stops the job
    // at the end of the run, so at most the last few are missing from the run.
    EXPECT_GE(compared + 20, static_cast<int>(logged.size())) << "rank " << rank;
    EXPECT_GT(compared, 10) << "rank " << rank;
  }
}

TEST_F(DdpEndToEnd, ALinkOutageStallsTrainingPastLinkUpAndEveryRankSurvives) {
  LinkObserver cable("fcl-sw0", "p1");
  const int64_t id = startRun(scenarioWithLog("ddp-link-flap"));
  ASSERT_GT(id, 0);
  const json run = waitForFinalRun(port_, id, 180);
  const auto changes = cable.stop();
  ASSERT_TRUE(run.value("state", "") == "passed" || run.value("state", "") == "failed")
      << run.dump(2);
  const json& step = run["result"]["analysis"]["steps"][0];
  const int64_t origin_ns = run["attributes"]["clock_origin_steady_ns"].get<int64_t>();

  // `ip` saw the cable go down and come back 10 s later.
  double down_ms = -1, up_ms = -1;
  for (const auto& c : changes) {
    const double t = static_cast<double>(c.t_ns - origin_ns) / 1e6;
    if (!c.admin_up && down_ms < 0) down_ms = t;
    if (c.admin_up && down_ms >= 0 && up_ms < 0) up_ms = t;
  }
  ASSERT_GE(down_ms, 0);
  ASSERT_GT(up_ms, down_ms);
  EXPECT_NEAR(up_ms - down_ms, 10000, 200);

  // The script's own log: training stopped for longer than the outage (gloo waits for TCP's next
  // retransmission after link-up), and every rank went on afterwards.
  const auto rank1 = readStepLog(dir_ + "/steps-rank1.csv");
  const double stall_ms = longestGapMs(rank1);
  EXPECT_GT(stall_ms, 10000) << "training went on through a 10 s outage of its ring";
  EXPECT_LT(stall_ms, 40000);
  const json samples = samplesOf(id);
  expectSamplesMatchTheScriptsLog(samples, origin_ns, dir_, 4);
  double resumed_ms = -1;  // the first step that started after link-up, on rank 1
  for (const auto& [n, s] : rank1) {
    const double start_ms = (s.t_start_s * 1e9 - static_cast<double>(origin_ns)) / 1e6;
    if (start_ms > up_ms) {
      resumed_ms = start_ms;
      break;
    }
  }
  ASSERT_GT(resumed_ms, 0) << "rank 1 logged no step after the link came back";

  // The run's account agrees: the stall it measured is the one the script logged, every rank
  // survived, and nothing is left on the fabric.
  EXPECT_TRUE(step["survived"].get<bool>()) << step.dump(2);
  EXPECT_NEAR(step["longest_stall_ms"].get<double>(), stall_ms, 1500) << step.dump(2);
  EXPECT_EQ(run["result"]["analysis"]["rate_unit"], "busbw_gbps");
  EXPECT_TRUE(httpRequest(port_, "GET", "/v1/faults").json()["faults"].empty());
  std::cout << "ddp-link-flap: cable down " << down_ms << " ms, up " << up_ms
            << " ms; rank 1's longest gap between steps " << stall_ms
            << " ms, first step after link-up " << (resumed_ms - up_ms)
            << " ms after it; run: score " << run["score"] << ", longest stall "
            << step["longest_stall_ms"] << " ms, retained " << step["retained"]
            << ", recovered after " << step["time_to_recover_ms"] << " ms\n";
}

TEST_F(DdpEndToEnd, PacketLossSlowsStepsAndTheyComeBack) {
  const int64_t id = startRun(scenarioWithLog("ddp-packet-loss"));
  ASSERT_GT(id, 0);
  const json run = waitForFinalRun(port_, id, 180);
  ASSERT_TRUE(run.value("state", "") == "passed" || run.value("state", "") == "failed")
      << run.dump(2);
  const json& step = run["result"]["analysis"]["steps"][0];
  const int64_t origin_ns = run["attributes"]["clock_origin_steady_ns"].get<int64_t>();
  expectSamplesMatchTheScriptsLog(samplesOf(id), origin_ns, dir_, 4);
  EXPECT_TRUE(step["survived"].get<bool>()) << step.dump(2);
  EXPECT_GT(step["fault_iteration_ms"]["p99"].get<double>(),
            step["baseline_iteration_ms"]["p99"].get<double>())
      << "5% loss on a gradient path did not slow a single step: " << step.dump(2);
  std::cout << "ddp-packet-loss: baseline p50 " << step["baseline_iteration_ms"]["p50"]
            << " ms p99 " << step["baseline_iteration_ms"]["p99"] << " ms; under loss p50 "
            << step["fault_iteration_ms"]["p50"] << " ms p99 " << step["fault_iteration_ms"]["p99"]
            << " ms; retained " << step["retained"] << ", recovered after "
            << step["time_to_recover_ms"] << " ms, score " << run["score"] << "\n";
}

// gloo's timeout (init_process_group(timeout=...)) shorter than the stall: the ranks die with
// gloo's own error, and the run says which rank, why, and what it printed.
TEST_F(DdpEndToEnd, AStallLongerThanGloosTimeoutKillsTheRanksWithItsError) {
  json scenario = scenarioWithLog("ddp-link-flap", {"--timeout-s", "8"});
  scenario["steps"][0]["params"]["down_ms"] = 15000;
  const int64_t id = startRun(scenario);
  ASSERT_GT(id, 0);
  const json run = waitForFinalRun(port_, id, 180);
  json events =
      httpRequest(port_, "GET", "/v1/runs/" + std::to_string(id) + "/events").json()["events"];
  const auto errors = eventsOfKind(events, "rank_error");
  ASSERT_FALSE(errors.empty()) << run.dump(2);
  // The ranks die together. The first to exit may be a victim ("Connection closed by peer") of
  // a rank whose gloo timeout fired; one of them says "Timed out".
  std::string tails;
  for (const json& error : errors) {
    EXPECT_EQ(error["detail"]["reason"], "exited") << error.dump();
    for (const json& line : error["detail"]["stderr_tail"]) tails += line.get<std::string>() + "\n";
  }
  EXPECT_NE(tails.find("Timed out"), std::string::npos) << tails;
  EXPECT_FALSE(eventsOfKind(events, "rank_exit").empty());
  // The run stopped on the death (stop_conditions.on_rank_death) and says why.
  EXPECT_NE(run.value("state", ""), "passed") << run.dump(2);
  const std::string error = run.dump();
  EXPECT_NE(error.find("Timed out"), std::string::npos) << run.dump(2);
  EXPECT_TRUE(httpRequest(port_, "GET", "/v1/faults").json()["faults"].empty());
  std::cout << "gloo timeout 8 s, outage 15 s: " << errors.size() << " rank_error event(s), first "
            << errors.front()["detail"]["rank"] << " at " << errors.front()["t_ms"]
            << " ms: " << errors.front()["detail"]["stderr_tail"].back() << "; run " << run["state"]
            << "\n";
}

}  // namespace
}  // namespace fabric_chaos::testing
