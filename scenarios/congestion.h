#pragma once
// What a fault step did to the fabric: the queue that suffered most while the fault was in force,
// from the run's switch telemetry (core/telemetry.h), and what a traffic fault's aggressors got.
// Pure.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/telemetry.h"

namespace fabric_chaos::scenarios {

struct QueueCongestion {
  std::string source;  // "sw0/p3/best_effort"
  // Over the window: counter differences between the last readings at or before its ends.
  int64_t tx_bytes = 0;
  int64_t drops = 0;
  int64_t ecn_marked = 0;
  int64_t peak_backlog_bytes = 0;  // the largest backlog read inside the window
};

// The switch queue (core::TelemetrySourceType::kSwitchQueue) with the most drops in
// [start_ms, end_ms], then the most ECN marks, then the most bytes sent; nullopt when no queue was
// read both at or before the start (or within the window) and inside it. A counter's value before
// the window is its last reading at or before start_ms, or its first reading inside the window when
// there is none.
std::optional<QueueCongestion> hottestQueue(const std::vector<core::TelemetryPoint>& points,
                                            double start_ms, double end_ms);

// {"source", "tx_bytes", "drops", "ecn_marked", "peak_backlog_bytes"}
nlohmann::json toJson(const QueueCongestion& congestion);

// A switch queue that PFC paused during a window (the lab switch's PFC agent's counters, carried
// on the lossless queue's telemetry: lab/switch_telemetry.h).
struct PausedQueue {
  std::string source;  // "sw0/p1/lossless"
  double paused_ms = 0;
  int64_t pause_frames = 0;
  int64_t watchdog_storms = 0;          // storms its PFC watchdog detected
  int64_t watchdog_dropped_frames = 0;  // frames the watchdog's drop action discarded
  // From the watchdog's own instants (pfcwd_detected_at_us, pfcwd_restored_at_us), not from the
  // readings' times. Detected: the window's start to its first detection inside the window.
  // Restored: the window's end to the restoration of the last storm detected inside it, when that
  // storm outlived the window (the watchdog still acting on the class after the fault ended);
  // nullopt when it ended inside the window, or no reading shows it ending.
  std::optional<double> watchdog_detected_after_ms;
  std::optional<double> watchdog_restored_after_ms;
};

// Every switch queue whose paused time or pause frames grew in [start_ms, end_ms] (counters as
// hottestQueue reads them), most paused first.
std::vector<PausedQueue> pausedQueues(const std::vector<core::TelemetryPoint>& points,
                                      double start_ms, double end_ms);

// {"source", "paused_ms", "pause_frames", "watchdog_storms", "watchdog_dropped_frames",
//  "watchdog_detected_after_ms", "watchdog_restored_after_ms"} (the last two null when unknown)
nlohmann::json toJson(const PausedQueue& queue);

// What the aggressors of a traffic fault (incast) got, from its observation taken before the
// revert (injectors/traffic/incast.h observe).
struct TrafficShare {
  std::vector<double> goodput_mbps;  // per source, over the source's own run
  double total_mbps = 0;
  double jain_fairness = 1;  // over the bytes each source sent
};

// nullopt when `observed` is not a traffic fault's observation.
std::optional<TrafficShare> trafficShare(const nlohmann::json& observed);

// {"goodput_mbps": [...], "total_mbps", "jain_fairness"}
nlohmann::json toJson(const TrafficShare& share);

// A traffic fault's observation as telemetry points at t_ms, so that the run keeps who sent how
// much over time (docs/api.md, "Telemetry"): for source i, a traffic source named after kind and
// source_hosts[i] (core/telemetry.h) with "sent_bytes" (what its generator has sent, its report's
// total) and "flows_connected"; for the sink, the sink role on sink_host with "received_bytes". A
// generator that has not reported yet, or a side the observation does not have (a part of a set cut
// across agents), gives no point.
std::vector<core::TelemetryPoint> trafficTelemetry(const nlohmann::json& observed,
                                                   const std::string& kind,
                                                   const std::vector<std::string>& source_hosts,
                                                   const std::string& sink_host, double t_ms);

}  // namespace fabric_chaos::scenarios
