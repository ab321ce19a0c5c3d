#pragma once
// One counter reading of a run's fabric telemetry (docs/api.md, "Telemetry"): a switch queue's
// bytes sent, drops, backlog or ECN marks, a traffic generator's bytes, or an RDMA port counter,
// at one instant of the run. What a source names is a type (TelemetrySource): the store keeps the
// name only, so the name is built and parsed here and nowhere else.

#include <cstdint>
#include <optional>
#include <string>

namespace fabric_chaos::core {

struct TelemetryPoint {
  double t_ms = 0;     // run-relative milliseconds, the samples' clock
  std::string source;  // what was read: telemetrySourceName()
  std::string metric;  // "tx_bytes", "drops", "backlog_bytes", "sent_bytes", "rcvd_pkts" ...
  int64_t value = 0;   // counters since the queue/generator/port began; gauges as read
};

enum class TelemetrySourceType {
  kSwitchQueue,  // "<switch>/<port>/<queue>": lab/switch_telemetry.h
  kTraffic,      // "traffic/<fault kind>/<host>" (a source) or ".../<host>/sink"
  kRdmaPort,     // "rdma/<host>/<device>/<port number>": hw_counters read by the host's agent
};

enum class TrafficRole { kSource, kSink };

struct TelemetrySource {
  TelemetrySourceType type = TelemetrySourceType::kSwitchQueue;
  // kSwitchQueue: node = switch, port = its port, detail = queue ("lossless", "best_effort").
  // kTraffic: node = host, detail = the fault kind ("incast", "hot_spot"), role.
  // kRdmaPort: node = host, detail = device ("rxe0"), port = port number ("1").
  std::string node;
  std::string port;
  std::string detail;
  TrafficRole role = TrafficRole::kSource;

  static TelemetrySource switchQueue(std::string sw, std::string port, std::string queue);
  static TelemetrySource traffic(std::string fault_kind, std::string host, TrafficRole role);
  static TelemetrySource rdmaPort(std::string host, std::string device, int port);
  bool operator==(const TelemetrySource&) const = default;
};

std::string telemetrySourceName(const TelemetrySource& source);
// The inverse of telemetrySourceName; nullopt for a name no source has (a stored row from a
// later version, or a hand-written filter).
std::optional<TelemetrySource> parseTelemetrySource(const std::string& name);
// "switch_queue", "traffic", "rdma_port": the API's word for the type.
const char* describe(TelemetrySourceType type);
const char* describe(TrafficRole role);

// Gauges are read as they are (a queue's backlog, a generator's connected flows, an instant);
// every other metric is a counter that only grows while its source lives.
bool isGaugeMetric(const std::string& metric);

// Instants: when something last happened, stored in run-relative microseconds (the samples'
// clock), such as when a PFC watchdog last detected a storm. A reader returns them as
// CLOCK_MONOTONIC nanoseconds, 0 for never; the run's sampler converts them to its clock and keeps
// no point for never (scenarios/engine/telemetry_sampler.h). Precise where the 100 ms readings
// are not: the event's own time, not the reading's.
bool isInstantMetric(const std::string& metric);

}  // namespace fabric_chaos::core
