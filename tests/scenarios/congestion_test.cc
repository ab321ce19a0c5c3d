// The hottest queue of a fault window from switch telemetry: counter differences across the
// window's ends, the peak backlog inside it, and the ranking by drops, then marks, then bytes.

#include "scenarios/congestion.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace fabric_chaos::scenarios {
namespace {

using core::TelemetryPoint;

// One queue read every 100 ms from 0 to 1000 ms: tx grows 1000 per tick, drops `drops_per_tick`
// from 300 ms to 600 ms, backlog 1000 * tick inside [300, 600].
std::vector<TelemetryPoint> queue(const std::string& source, int64_t drops_per_tick) {
  std::vector<TelemetryPoint> points;
  int64_t drops = 0;
  for (int tick = 0; tick <= 10; ++tick) {
    const double t = tick * 100.0;
    const bool hot = t > 300 && t <= 600;
    if (hot) drops += drops_per_tick;
    points.push_back({t, source, "backlog_bytes", hot ? 1000 * tick : 0});
    points.push_back({t, source, "drops", drops});
    points.push_back({t, source, "tx_bytes", 1000 * tick});
  }
  return points;
}

TEST(CongestionTest, TheQueueThatDroppedMostDuringTheWindow) {
  std::vector<TelemetryPoint> points = queue("sw0/p1/best_effort", 1);
  const auto hot = queue("sw0/p3/best_effort", 5);
  points.insert(points.end(), hot.begin(), hot.end());
  const auto q = hottestQueue(points, 250, 650);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->source, "sw0/p3/best_effort");
  EXPECT_EQ(q->drops, 15);       // ticks 400, 500, 600
  EXPECT_EQ(q->tx_bytes, 4000);  // 6000 at 600 ms - 2000 at 200 ms
  EXPECT_EQ(q->peak_backlog_bytes, 6000);
  EXPECT_EQ(q->ecn_marked, 0);
  EXPECT_EQ(toJson(*q), (nlohmann::json{{"source", "sw0/p3/best_effort"},
                                        {"tx_bytes", 4000},
                                        {"drops", 15},
                                        {"ecn_marked", 0},
                                        {"peak_backlog_bytes", 6000}}));
}

TEST(CongestionTest, WithoutDropsMarksThenBytesDecide) {
  std::vector<TelemetryPoint> points = {
      {0, "sw0/a/best_effort", "tx_bytes", 0},   {100, "sw0/a/best_effort", "tx_bytes", 900},
      {0, "sw0/b/best_effort", "tx_bytes", 0},   {100, "sw0/b/best_effort", "tx_bytes", 10},
      {0, "sw0/b/best_effort", "ecn_marked", 0}, {100, "sw0/b/best_effort", "ecn_marked", 3}};
  auto q = hottestQueue(points, 0, 100);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->source, "sw0/b/best_effort");
  EXPECT_EQ(q->ecn_marked, 3);
  points.resize(4);
  q = hottestQueue(points, 0, 100);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->source, "sw0/a/best_effort");
}

TEST(CongestionTest, AWindowWithoutReadingsHasNoHottestQueue) {
  const auto points = queue("sw0/p1/best_effort", 1);
  EXPECT_FALSE(hottestQueue(points, 2000, 3000).has_value()) << "nothing read inside";
  EXPECT_FALSE(hottestQueue({}, 0, 100).has_value());
  // A window that starts before the first reading counts from its first reading inside.
  const auto q = hottestQueue(points, -500, 150);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->tx_bytes, 1000);
}

TEST(CongestionTest, SeriesThatAreNotSwitchQueuesAreNeverTheHottest) {
  // Even with a queue's metric names, a traffic generator or an RDMA port is not a queue.
  std::vector<TelemetryPoint> points = {
      {0, "traffic/incast/h0", "tx_bytes", 0}, {100, "traffic/incast/h0", "tx_bytes", 1 << 20},
      {0, "traffic/incast/h0", "drops", 0},    {100, "traffic/incast/h0", "drops", 9},
      {0, "rdma/vm1/rxe0/1", "tx_bytes", 0},   {100, "rdma/vm1/rxe0/1", "tx_bytes", 1 << 21},
      {0, "rdma/vm1/rxe0/1", "drops", 0},      {100, "rdma/vm1/rxe0/1", "drops", 19}};
  EXPECT_FALSE(hottestQueue(points, 0, 100).has_value());
  const auto queue_points = queue("sw0/p1/best_effort", 1);
  points.insert(points.end(), queue_points.begin(), queue_points.end());
  const auto q = hottestQueue(points, 0, 1000);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->source, "sw0/p1/best_effort");
}

TEST(CongestionTest, ATrafficObservationBecomesPerHostCountersAtItsTime) {
  const nlohmann::json observed = {
      {"running", true},
      {"sink", {{"endpoint", "eth0"}, {"report", {{"bytes", 5000}}}}},
      {"sources",
       {{{"endpoint", "eth0"}, {"report", {{"bytes", 3000}, {"connected", 2}}}},
        {{"endpoint", "eth0"}, {"report", nullptr}}}}};
  const auto points = trafficTelemetry(observed, "incast", {"vm0", "vm2"}, "vm1", 1500);
  ASSERT_EQ(points.size(), 3u) << "vm2 has not reported yet";
  EXPECT_EQ(points[0].source, "traffic/incast/vm0");
  EXPECT_EQ(points[0].metric, "sent_bytes");
  EXPECT_EQ(points[0].value, 3000);
  EXPECT_EQ(points[0].t_ms, 1500);
  EXPECT_EQ(points[1].metric, "flows_connected");
  EXPECT_EQ(points[1].value, 2);
  EXPECT_EQ(points[2].source, "traffic/incast/vm1/sink");
  EXPECT_EQ(points[2].metric, "received_bytes");
  EXPECT_EQ(points[2].value, 5000);
  // A sources part's observation has no sink; a sink part's no sources.
  EXPECT_EQ(trafficTelemetry(observed, "incast", {"vm0", "vm2"}, "", 0).size(), 2u);
  EXPECT_EQ(trafficTelemetry(observed, "incast", {}, "vm1", 0).size(), 1u);
  EXPECT_TRUE(trafficTelemetry(nullptr, "incast", {"vm0"}, "vm1", 0).empty());
}

TEST(CongestionTest, TrafficShareFromAnIncastObservation) {
  const nlohmann::json observed = {{"running", true},
                                   {"source_bytes", {300, 100}},
                                   {"source_goodput_mbps", {60.0, 20.0}},
                                   {"jain_fairness", 0.8}};
  const auto share = trafficShare(observed);
  ASSERT_TRUE(share.has_value());
  EXPECT_EQ(share->goodput_mbps, (std::vector<double>{60.0, 20.0}));
  EXPECT_DOUBLE_EQ(share->total_mbps, 80.0);
  EXPECT_DOUBLE_EQ(share->jain_fairness, 0.8);
  EXPECT_EQ(toJson(*share),
            (nlohmann::json{
                {"goodput_mbps", {60.0, 20.0}}, {"total_mbps", 80.0}, {"jain_fairness", 0.8}}));
  EXPECT_FALSE(trafficShare({{"running", true}, {"report", {{"frames", 3}}}}).has_value())
      << "a pfc_storm observation is not traffic";
  EXPECT_FALSE(trafficShare(nullptr).has_value());
}

TEST(CongestionTest, PausedQueuesAreThoseWhosePausedTimeGrewInTheWindow) {
  std::vector<TelemetryPoint> points;
  for (int tick = 0; tick <= 10; ++tick) {
    const double t = tick * 100.0;
    // p1 paused from 300 ms on (100 ms of pause per tick), one frame per tick; p2 paused before.
    const int64_t paused_ticks = std::max(0, tick - 3);
    points.push_back({t, "sw0/p1/lossless", "pfc_paused_us", paused_ticks * 100'000});
    points.push_back({t, "sw0/p1/lossless", "pfc_rx_pause", paused_ticks});
    points.push_back({t, "sw0/p1/lossless", "pfcwd_storms", tick >= 6 ? 1 : 0});
    points.push_back({t, "sw0/p2/lossless", "pfc_paused_us", 250'000});
    points.push_back({t, "traffic/incast/h1", "pfc_paused_us", tick * 1000});  // not a queue
  }
  const auto paused = pausedQueues(points, 200, 800);
  ASSERT_EQ(paused.size(), 1u);
  EXPECT_EQ(paused[0].source, "sw0/p1/lossless");
  EXPECT_DOUBLE_EQ(paused[0].paused_ms, 500);
  EXPECT_EQ(paused[0].pause_frames, 5);
  EXPECT_EQ(paused[0].watchdog_storms, 1);
  EXPECT_EQ(toJson(paused[0])["paused_ms"], 500.0);
  EXPECT_TRUE(paused[0].watchdog_detected_after_ms == std::nullopt) << "no instants were read";
  EXPECT_TRUE(toJson(paused[0])["watchdog_restored_after_ms"].is_null());
  EXPECT_TRUE(pausedQueues(points, 0, 250).empty());
}

// A storm paused p1 from 1000 ms; its watchdog detected it at 1201.5 ms and restored the class at
// 3210 ms, 210 ms after the window's end, read every 100 ms as the agent's last instants.
std::vector<TelemetryPoint> watchedStorm(double restored_ms) {
  std::vector<TelemetryPoint> points;
  const std::string q = "sw0/p1/lossless";
  for (int tick = 0; tick <= 40; ++tick) {
    const double t = tick * 100.0;
    points.push_back({t, q, "pfc_paused_us", static_cast<int64_t>(std::max(0.0, t - 1000) * 1000)});
    if (t >= 1300) points.push_back({t, q, "pfcwd_detected_at_us", 1'201'500});
    if (t >= restored_ms + 100) {
      points.push_back({t, q, "pfcwd_restored_at_us", static_cast<int64_t>(restored_ms * 1000)});
    }
  }
  return points;
}

TEST(CongestionTest, TheWatchdogsDetectionAndRestorationAreItsOwnInstants) {
  auto paused = pausedQueues(watchedStorm(3210), 1000, 3000);
  ASSERT_EQ(paused.size(), 1u);
  ASSERT_TRUE(paused[0].watchdog_detected_after_ms.has_value());
  EXPECT_DOUBLE_EQ(*paused[0].watchdog_detected_after_ms, 201.5) << "not the 300 ms reading";
  ASSERT_TRUE(paused[0].watchdog_restored_after_ms.has_value());
  EXPECT_DOUBLE_EQ(*paused[0].watchdog_restored_after_ms, 210);
  EXPECT_EQ(toJson(paused[0])["watchdog_detected_after_ms"], 201.5);
  // A storm the watchdog restored before the fault ended: nothing acted past the window.
  paused = pausedQueues(watchedStorm(2500), 1000, 3000);
  ASSERT_EQ(paused.size(), 1u);
  EXPECT_TRUE(paused[0].watchdog_detected_after_ms.has_value());
  EXPECT_FALSE(paused[0].watchdog_restored_after_ms.has_value());
  // A detection before the window (an earlier step's) is not this window's.
  paused = pausedQueues(watchedStorm(3210), 1250, 3000);
  ASSERT_EQ(paused.size(), 1u);
  EXPECT_FALSE(paused[0].watchdog_detected_after_ms.has_value());
  EXPECT_FALSE(paused[0].watchdog_restored_after_ms.has_value());
}

TEST(CongestionTest, ARestorationAfterALaterDetectionBelongsToTheLaterStorm) {
  std::vector<TelemetryPoint> points = watchedStorm(1e9);
  // The watchdog detected a storm at 1201.5 ms whose restoration no reading shows (the run ended,
  // or a reading was missed), then a later step's storm at 3400 ms, restored at 3900 ms.
  points.push_back({3500, "sw0/p1/lossless", "pfcwd_detected_at_us", 3'400'000});
  points.push_back({4000, "sw0/p1/lossless", "pfcwd_restored_at_us", 3'900'000});
  const auto paused = pausedQueues(points, 1000, 3000);
  ASSERT_EQ(paused.size(), 1u);
  EXPECT_DOUBLE_EQ(paused[0].watchdog_detected_after_ms.value_or(-1), 201.5);
  EXPECT_FALSE(paused[0].watchdog_restored_after_ms.has_value());
}

}  // namespace
}  // namespace fabric_chaos::scenarios
