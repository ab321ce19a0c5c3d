#pragma once
// What a fault step did to the fabric's queues, from the run's switch telemetry
// (core/telemetry.h): the queue that suffered most while the fault was in force. Pure.

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

// The queue with the most drops in [start_ms, end_ms], then the most ECN marks, then the most
// bytes sent; nullopt when no queue was read both at or before the start (or within the window)
// and inside it. A counter's value before the window is its last reading at or before start_ms,
// or its first reading inside the window when there is none.
std::optional<QueueCongestion> hottestQueue(const std::vector<core::TelemetryPoint>& points,
                                            double start_ms, double end_ms);

// {"source", "tx_bytes", "drops", "ecn_marked", "peak_backlog_bytes"}
nlohmann::json toJson(const QueueCongestion& congestion);

}  // namespace fabric_chaos::scenarios
