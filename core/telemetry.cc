#include "core/telemetry.h"

#include <vector>

namespace fabric_chaos::core {
namespace {

constexpr char kTrafficPrefix[] = "traffic";
constexpr char kRdmaPrefix[] = "rdma";
constexpr char kSinkSuffix[] = "sink";

std::vector<std::string> splitOnSlash(const std::string& name) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t slash = name.find('/', start);
    parts.push_back(name.substr(start, slash - start));
    if (slash == std::string::npos) return parts;
    start = slash + 1;
  }
}

bool allNonEmpty(const std::vector<std::string>& parts) {
  for (const std::string& p : parts) {
    if (p.empty()) return false;
  }
  return true;
}

}  // namespace

TelemetrySource TelemetrySource::switchQueue(std::string sw, std::string port, std::string queue) {
  return {TelemetrySourceType::kSwitchQueue, std::move(sw), std::move(port), std::move(queue),
          TrafficRole::kSource};
}

TelemetrySource TelemetrySource::traffic(std::string fault_kind, std::string host,
                                         TrafficRole role) {
  return {TelemetrySourceType::kTraffic, std::move(host), "", std::move(fault_kind), role};
}

TelemetrySource TelemetrySource::rdmaPort(std::string host, std::string device, int port) {
  return {TelemetrySourceType::kRdmaPort, std::move(host), std::to_string(port), std::move(device),
          TrafficRole::kSource};
}

std::string telemetrySourceName(const TelemetrySource& s) {
  switch (s.type) {
    case TelemetrySourceType::kSwitchQueue:
      return s.node + "/" + s.port + "/" + s.detail;
    case TelemetrySourceType::kTraffic:
      return std::string(kTrafficPrefix) + "/" + s.detail + "/" + s.node +
             (s.role == TrafficRole::kSink ? std::string("/") + kSinkSuffix : "");
    case TelemetrySourceType::kRdmaPort:
      return std::string(kRdmaPrefix) + "/" + s.node + "/" + s.detail + "/" + s.port;
  }
  return s.node;
}

std::optional<TelemetrySource> parseTelemetrySource(const std::string& name) {
  const std::vector<std::string> parts = splitOnSlash(name);
  if (!allNonEmpty(parts)) return std::nullopt;
  // A lab switch is never called "traffic" or "rdma" (lab/: sw<N>, l<N>, s<N>), so the first
  // segment tells the types apart.
  if (parts[0] == kTrafficPrefix) {
    if (parts.size() == 3)
      return TelemetrySource::traffic(parts[1], parts[2], TrafficRole::kSource);
    if (parts.size() == 4 && parts[3] == kSinkSuffix) {
      return TelemetrySource::traffic(parts[1], parts[2], TrafficRole::kSink);
    }
    return std::nullopt;
  }
  if (parts[0] == kRdmaPrefix) {
    if (parts.size() != 4 || parts[3].find_first_not_of("0123456789") != std::string::npos) {
      return std::nullopt;
    }
    TelemetrySource s = TelemetrySource::rdmaPort(parts[1], parts[2], 0);
    s.port = parts[3];
    return s;
  }
  if (parts.size() == 3) return TelemetrySource::switchQueue(parts[0], parts[1], parts[2]);
  return std::nullopt;
}

const char* describe(TelemetrySourceType type) {
  switch (type) {
    case TelemetrySourceType::kSwitchQueue:
      return "switch_queue";
    case TelemetrySourceType::kTraffic:
      return "traffic";
    case TelemetrySourceType::kRdmaPort:
      return "rdma_port";
  }
  return "unknown";
}

const char* describe(TrafficRole role) { return role == TrafficRole::kSink ? "sink" : "source"; }

bool isGaugeMetric(const std::string& metric) {
  return metric == "backlog_bytes" || metric == "flows_connected" || isInstantMetric(metric);
}

bool isInstantMetric(const std::string& metric) {
  return metric == "pfcwd_detected_at_us" || metric == "pfcwd_restored_at_us";
}

}  // namespace fabric_chaos::core
