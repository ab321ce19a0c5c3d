#pragma once
// One counter reading of a run's fabric telemetry (docs/api.md, "Telemetry"): a switch queue's
// bytes sent, drops, backlog or ECN marks, or an RDMA port counter, at one instant of the run.

#include <cstdint>
#include <string>

namespace fabric_chaos::core {

struct TelemetryPoint {
  double t_ms = 0;     // run-relative milliseconds, the samples' clock
  std::string source;  // what was read: "sw0/p3/best_effort" (switch/port/queue)
  std::string metric;  // "tx_bytes", "tx_packets", "drops", "backlog_bytes", "ecn_marked"
  int64_t value = 0;   // counters since the queue was made; gauges (backlog) as read
};

}  // namespace fabric_chaos::core
