// End to end through the REST API on a real namespace lab: `fabric-chaos serve --with-lab 4`,
// a link-flap and a packet-loss run, checked against independent observers (`ip`, `nft`), the
// workload's samples and the stored analysis. After each test the lab is gone.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "core/sample.h"
#include "scenarios/analysis.h"
#include "tests/privileged/support.h"

namespace fabric_chaos::testing {
namespace {

using nlohmann::json;

constexpr double kTimingToleranceMs = 50;

std::vector<core::Sample> samplesFrom(const json& body) {
  std::vector<core::Sample> samples;
  for (const auto& s : body["samples"]) {
    samples.push_back({s["rank"].get<int>(), s["iteration"].get<int64_t>(),
                       s["start_ms"].get<double>(), s["duration_ms"].get<double>(),
                       s["bytes"].get<int64_t>()});
  }
  return samples;
}

class EndToEndRun : public ServeWithLabTest {
 protected:
  EndToEndRun() : ServeWithLabTest(4) {}
};

TEST_F(EndToEndRun, LinkFlapIsObservedAtTheScheduledTimesAndScored) {
  const json scenario = {
      {"version", 1},
      {"name", "e2e-link-flap"},
      {"workload", {{"message_bytes", 262144}, {"compute_ms", 5}, {"peer_timeout_ms", 10000}}},
      {"baseline_ms", 2000},
      {"steps",
       {{{"kind", "link_flap"},
         {"target", {{"host", "h1"}, {"side", "switch"}}},
         {"at_ms", 0},
         {"params", {{"down_ms", 1000}, {"up_ms", 1000}, {"count", 2}}}}}},
      {"recovery_ms", 6000},
      {"gates", {{"require_survival", true}}}};

  LinkObserver observer("fcl-sw0", "p1");
  const int64_t id = startRun(scenario);
  ASSERT_GT(id, 0);
  json run = waitForFinalRun(port_, id, 90);
  auto changes = observer.stop();
  ASSERT_EQ(run.value("state", ""), "passed") << run.dump(2);

  const int64_t origin_ns = run["attributes"]["clock_origin_steady_ns"].get<int64_t>();
  auto toRunMs = [&](int64_t t_ns) { return static_cast<double>(t_ns - origin_ns) / 1e6; };

  // The observer saw: up (initial), down, up, down, up.
  std::vector<LinkObserver::Change> transitions;
  for (const auto& c : changes) {
    if (transitions.empty() ? !c.admin_up : c.admin_up != transitions.back().admin_up) {
      transitions.push_back(c);
    }
  }
  ASSERT_EQ(transitions.size(), 4u) << "expected down/up/down/up";

  json events =
      httpRequest(port_, "GET", "/v1/runs/" + std::to_string(id) + "/events").json()["events"];
  auto applied = eventsOfKind(events, "fault_applied");
  auto reverted = eventsOfKind(events, "fault_reverted");
  ASSERT_EQ(applied.size(), 2u);
  ASSERT_EQ(reverted.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const double observed_down = toRunMs(transitions[2 * i].t_ns);
    const double observed_up = toRunMs(transitions[2 * i + 1].t_ns);
    EXPECT_FALSE(transitions[2 * i].admin_up);
    EXPECT_TRUE(transitions[2 * i + 1].admin_up);
    // Scheduled instant, the engine's record, and the independent observation agree.
    EXPECT_NEAR(observed_down, applied[i]["detail"]["scheduled_ms"].get<double>(),
                kTimingToleranceMs);
    EXPECT_NEAR(observed_down, applied[i]["t_ms"].get<double>(), kTimingToleranceMs);
    EXPECT_NEAR(observed_up, reverted[i]["detail"]["scheduled_ms"].get<double>(),
                kTimingToleranceMs);
    EXPECT_NEAR(observed_up - observed_down, 1000, kTimingToleranceMs);
    std::cout << "phase " << i << ": observed down at " << observed_down << " ms (scheduled "
              << applied[i]["detail"]["scheduled_ms"].get<double>() << "), up at " << observed_up
              << " ms (scheduled " << reverted[i]["detail"]["scheduled_ms"].get<double>() << ")\n";
  }
  const double fault_start = toRunMs(transitions[0].t_ns);
  const double fault_end = toRunMs(transitions[3].t_ns);

  // The samples show the stall inside the fault window: some iteration (or the gap between
  // two) spans at least most of a 1 s outage, and it lies within the window.
  auto samples =
      samplesFrom(httpRequest(port_, "GET", "/v1/runs/" + std::to_string(id) + "/samples").json());
  ASSERT_FALSE(samples.empty());
  double longest_in_window = 0;
  for (const auto& s : samples) {
    const double end = s.start_ms + s.duration_ms;
    if (end > fault_start && s.start_ms < fault_end + 1000) {
      longest_in_window = std::max(longest_in_window, s.duration_ms);
    }
  }
  const auto& analysis = run["result"]["analysis"];
  const auto& step = analysis["steps"][0];
  EXPECT_GT(std::max(longest_in_window, step["longest_stall_ms"].get<double>()), 800);
  double baseline_longest = 0;
  const double baseline_end = run["result"]["baseline"]["end_ms"].get<double>();
  for (const auto& s : samples) {
    if (s.start_ms + s.duration_ms < baseline_end) {
      baseline_longest = std::max(baseline_longest, s.duration_ms);
    }
  }
  EXPECT_LT(baseline_longest, 500) << "the baseline itself stalled";

  // The stored analysis used the observed outage: its window matches what `ip` saw...
  EXPECT_NEAR(step["fault_start_ms"].get<double>(), fault_start, kTimingToleranceMs);
  EXPECT_NEAR(step["fault_end_ms"].get<double>(), fault_end, kTimingToleranceMs);
  // ...and recomputing it from the samples and the observed window gives the same figures.
  scenarios::AnalysisParams params;
  params.world_size = 4;
  params.baseline_start_ms = run["result"]["baseline"]["start_ms"].get<double>();
  params.baseline_end_ms = baseline_end;
  params.observe_end_ms = run["result"]["observe_end_ms"].get<double>();
  auto recomputed =
      scenarios::analyzeRun(samples, {{0, fault_start, fault_end}}, params, /*survived=*/true);
  ASSERT_EQ(recomputed.steps.size(), 1u);
  ASSERT_TRUE(step["time_to_recover_ms"].is_number()) << step.dump();
  ASSERT_TRUE(recomputed.steps[0].time_to_recover_ms.has_value());
  // One iteration period is the resolution of recovery; allow it plus the observer's jitter.
  EXPECT_NEAR(*recomputed.steps[0].time_to_recover_ms, step["time_to_recover_ms"].get<double>(),
              kTimingToleranceMs + 50);
  EXPECT_NEAR(recomputed.score, run["score"].get<double>(), 5);
  std::cout << "stored: score " << run["score"].get<double>() << ", recovery "
            << step["time_to_recover_ms"].get<double>() << " ms, longest stall "
            << step["longest_stall_ms"].get<double>()
            << " ms; recomputed from the observed window: "
            << "score " << recomputed.score << ", recovery "
            << *recomputed.steps[0].time_to_recover_ms << " ms\n";
  EXPECT_GT(run["score"].get<double>(), 0);
  EXPECT_LT(run["score"].get<double>(), 100);
}

// Egress on h1's switch port (towards h1): the direction both backends can do, so the test runs
// on netem and on nftables kernels, and observes whichever one the run recorded.
TEST_F(EndToEndRun, PacketLossDropsPacketsAndSlowsTheWorkload) {
  const json scenario = {{"version", 1},
                         {"name", "e2e-packet-loss"},
                         {"workload", {{"message_bytes", 262144}, {"compute_ms", 5}}},
                         {"baseline_ms", 2000},
                         {"steps",
                          {{{"kind", "packet_loss"},
                            {"target", {{"host", "h1"}}},
                            {"at_ms", 0},
                            {"duration_ms", 3000},
                            {"params", {{"percent", 20}, {"direction", "egress"}}}}}},
                         {"recovery_ms", 4000},
                         {"gates", {{"require_survival", true}}}};

  const int64_t id = startRun(scenario);
  ASSERT_GT(id, 0);
  // Independent observer: nft or tc itself, inside the switch namespace, while the fault is on,
  // for the backend the run recorded.
  int64_t max_dropped_seen = 0;
  json run;
  std::string backend;
  const int64_t deadline = steadyNowNs() + int64_t{90} * 1000000000;
  while (steadyNowNs() < deadline) {
    if (backend == "netem") {
      auto out = runShell("tc -n fcl-sw0 -s -j qdisc show dev p1 2>/dev/null");
      auto doc = json::parse(out.out, nullptr, false);
      for (const auto& q : doc.is_array() ? doc : json::array()) {
        if (q.value("kind", "") == "netem") {
          max_dropped_seen = std::max(max_dropped_seen, q.value("drops", int64_t{0}));
        }
      }
    }
    auto out = runShell("ip netns exec fcl-sw0 nft -j list table netdev fc_loss_p1 2>/dev/null");
    if (backend == "nftables" && out.exit_code == 0) {
      auto doc = json::parse(out.out, nullptr, false);
      for (const auto& item : doc.value("nftables", json::array())) {
        if (!item.contains("rule")) continue;
        bool drops = false;
        int64_t packets = 0;
        for (const auto& expr : item["rule"]["expr"]) {
          if (expr.contains("drop")) drops = true;
          if (expr.contains("counter")) packets = expr["counter"]["packets"].get<int64_t>();
        }
        if (drops) max_dropped_seen = std::max(max_dropped_seen, packets);
      }
    }
    run = httpRequest(port_, "GET", "/v1/runs/" + std::to_string(id)).json();
    backend = run.value("attributes", json::object()).value("loss_backend", "");
    const std::string state = run.value("state", "");
    if (state == "passed" || state == "failed" || state == "error") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(run.value("state", "") == "passed" || run.value("state", "") == "failed")
      << run.dump(2);
  ASSERT_TRUE(backend == "nftables" || backend == "netem") << run.dump(2);
  EXPECT_GT(max_dropped_seen, 0) << backend << " never counted a dropped packet";
  // Nothing of the fault is left after the revert: no loss table, no netem.
  EXPECT_NE(
      runShell("ip netns exec fcl-sw0 nft list table netdev fc_loss_p1 2>/dev/null").exit_code, 0);
  EXPECT_EQ(runShell("tc -n fcl-sw0 qdisc show dev p1").out.find("netem"), std::string::npos);
  // The engine's own observation at revert time agrees that packets were dropped.
  json events =
      httpRequest(port_, "GET", "/v1/runs/" + std::to_string(id) + "/events").json()["events"];
  auto reverted = eventsOfKind(events, "fault_reverted");
  ASSERT_EQ(reverted.size(), 1u);
  EXPECT_GT(reverted[0]["detail"]["observed"].value("dropped", int64_t{0}), 0);

  // The workload slowed down: 20% loss on one ring link costs TCP a lot of its throughput.
  const auto& step = run["result"]["analysis"]["steps"][0];
  std::cout << backend << " dropped " << max_dropped_seen << " packets (observer), "
            << reverted[0]["detail"]["observed"].dump() << " (engine); retained "
            << step["retained"].get<double>() << ", worst busbw "
            << step["worst_busbw_gbps"].get<double>() << " GB/s vs baseline "
            << run["result"]["analysis"]["baseline_busbw_gbps"].get<double>() << ", score "
            << run["score"].get<double>() << "\n";
  EXPECT_LT(step["retained"].get<double>(), 0.8) << step.dump();
  EXPECT_LT(step["worst_busbw_gbps"].get<double>(),
            0.5 * run["result"]["analysis"]["baseline_busbw_gbps"].get<double>());
}

}  // namespace
}  // namespace fabric_chaos::testing
