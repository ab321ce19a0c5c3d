#pragma once
// The lab switch's telemetry: each modelled port's two class queues (lab/port_model.h: bfifo 10:
// lossless, 20: best effort) read from the kernel's qdisc statistics, plus the ECN marker's
// counts when the port marks. One rtnetlink dump per switch namespace per reading.
//
// Points, per port and queue, source "<switch>/<port>/<queue>" (queue "lossless" or
// "best_effort"): tx_bytes, tx_packets, drops (counters since the lab came up), backlog_bytes
// (queued now) and, on marking ports, ecn_marked (counter). On a switch that honours PFC, the
// lossless queue also has its PFC agent's counters (lab/pfc_agent.h's stats file): pfc_rx_pause
// (pause frames received for the lossless priority), pfc_paused_us (time paused) and, with a
// watchdog, pfcwd_storms and pfcwd_dropped_frames (counters) and the instants of its last
// detection and restoration, pfcwd_detected_at_us and pfcwd_restored_at_us (core/telemetry.h:
// read as CLOCK_MONOTONIC nanoseconds).

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "injectors/sys/qdisc_stats.h"
#include "scenarios/services.h"

namespace fabric_chaos::lab {

// The points of one reading of `sw` (pure): `qdiscs` as read in its namespace, `marks` the ECN
// marked counts per port when the switch marks (lossless, best effort), in sw.ports order.
struct PortMarks {
  std::string port;
  uint64_t lossless = 0;
  uint64_t best_effort = 0;
};
std::vector<core::TelemetryPoint> switchTelemetryPoints(
    const scenarios::Switch& sw, const std::vector<sys::QdiscCounters>& qdiscs,
    const std::vector<PortMarks>& marks);

// The PFC points of `sw` (pure) from its PFC agent's stats document; none when the document has
// no port of `sw`.
std::vector<core::TelemetryPoint> pfcTelemetryPoints(const scenarios::Switch& sw,
                                                     const nlohmann::json& stats);

// Reads through the real kernel (injectors/sys/qdisc_stats.h, injectors/sys/ecn_marker.h) and,
// for a switch that honours PFC, its agent's stats file under `state_dir` (a lab brought up with
// another state directory gives no PFC points). A switch without a modelled egress has no queues
// to read: an empty reading.
std::unique_ptr<scenarios::SwitchTelemetry> makeKernelSwitchTelemetry(std::string state_dir);

}  // namespace fabric_chaos::lab
