#include "scenarios/congestion.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <tuple>

namespace fabric_chaos::scenarios {
namespace {

// One metric of one queue over the window.
struct Span {
  std::optional<int64_t> before;  // last reading at or before the start
  std::optional<int64_t> first;   // first reading inside the window
  std::optional<int64_t> last;    // last reading inside the window
  int64_t peak = 0;               // largest reading inside the window
};

int64_t difference(const Span& span) {
  if (!span.last) return 0;
  const int64_t from = span.before ? *span.before : span.first.value_or(*span.last);
  return std::max<int64_t>(0, *span.last - from);
}

using SeriesSpans = std::map<std::string, std::map<std::string, Span>>;

// Every series' span over [start_ms, end_ms], by source and metric.
SeriesSpans spansOf(const std::vector<core::TelemetryPoint>& points, double start_ms,
                    double end_ms) {
  SeriesSpans queues;
  for (const core::TelemetryPoint& p : points) {
    if (p.t_ms > end_ms) continue;
    Span& span = queues[p.source][p.metric];
    if (p.t_ms <= start_ms) {
      span.before = p.value;  // points of one series come in time order
      continue;
    }
    if (!span.first) span.first = p.value;
    span.last = p.value;
    span.peak = std::max(span.peak, p.value);
  }
  return queues;
}

bool isSwitchQueue(const std::string& source) {
  const auto type = core::parseTelemetrySource(source);
  return type && type->type == core::TelemetrySourceType::kSwitchQueue;
}

// Every distinct instant of `metric` that `source`'s readings show, in run ms, ascending. An
// instant is the event's own time, so readings of any time count (a restoration after the window
// is read after it).
std::set<double> instantsOf(const std::vector<core::TelemetryPoint>& points,
                            const std::string& source, const char* metric) {
  std::set<double> out;
  for (const core::TelemetryPoint& p : points) {
    if (p.source == source && p.metric == metric) out.insert(static_cast<double>(p.value) / 1000);
  }
  return out;
}

void attachWatchdogTimes(PausedQueue& queue, const std::vector<core::TelemetryPoint>& points,
                         double start_ms, double end_ms) {
  const std::set<double> detected = instantsOf(points, queue.source, "pfcwd_detected_at_us");
  auto first = detected.lower_bound(start_ms);
  if (first == detected.end() || *first > end_ms) return;
  queue.watchdog_detected_after_ms = *first - start_ms;
  const double last = *std::prev(detected.upper_bound(end_ms));
  const std::set<double> restored = instantsOf(points, queue.source, "pfcwd_restored_at_us");
  auto ended = restored.lower_bound(last);
  if (ended == restored.end() || *ended < end_ms) return;
  // A detection between the window's end and that restoration is a later storm's: its
  // restoration is not this one's.
  if (detected.upper_bound(end_ms) != detected.end() && *detected.upper_bound(end_ms) < *ended) {
    return;
  }
  queue.watchdog_restored_after_ms = *ended - end_ms;
}

nlohmann::json optionalMs(const std::optional<double>& ms) {
  return ms ? nlohmann::json(*ms) : nlohmann::json(nullptr);
}

}  // namespace

std::vector<PausedQueue> pausedQueues(const std::vector<core::TelemetryPoint>& points,
                                      double start_ms, double end_ms) {
  std::vector<PausedQueue> out;
  for (const auto& [source, series] : spansOf(points, start_ms, end_ms)) {
    if (!isSwitchQueue(source)) continue;
    // A named reference, not the structured binding: clang 14 cannot capture those.
    const std::map<std::string, Span>& metrics = series;
    auto grew = [&metrics](const char* metric) -> int64_t {
      auto it = metrics.find(metric);
      return it == metrics.end() ? 0 : difference(it->second);
    };
    PausedQueue q;
    q.source = source;
    q.paused_ms = static_cast<double>(grew("pfc_paused_us")) / 1000.0;
    q.pause_frames = grew("pfc_rx_pause");
    q.watchdog_storms = grew("pfcwd_storms");
    q.watchdog_dropped_frames = grew("pfcwd_dropped_frames");
    if (q.paused_ms == 0 && q.pause_frames == 0) continue;
    attachWatchdogTimes(q, points, start_ms, end_ms);
    out.push_back(std::move(q));
  }
  std::stable_sort(out.begin(), out.end(), [](const PausedQueue& a, const PausedQueue& b) {
    return a.paused_ms > b.paused_ms;
  });
  return out;
}

nlohmann::json toJson(const PausedQueue& queue) {
  return {{"source", queue.source},
          {"paused_ms", queue.paused_ms},
          {"pause_frames", queue.pause_frames},
          {"watchdog_storms", queue.watchdog_storms},
          {"watchdog_dropped_frames", queue.watchdog_dropped_frames},
          {"watchdog_detected_after_ms", optionalMs(queue.watchdog_detected_after_ms)},
          {"watchdog_restored_after_ms", optionalMs(queue.watchdog_restored_after_ms)}};
}

std::optional<QueueCongestion> hottestQueue(const std::vector<core::TelemetryPoint>& points,
                                            double start_ms, double end_ms) {
  const SeriesSpans queues = spansOf(points, start_ms, end_ms);
  std::optional<QueueCongestion> hottest;
  for (const auto& [source, metrics] : queues) {
    // Traffic generators' and RDMA ports' series are the run's telemetry too, but not queues.
    if (!isSwitchQueue(source)) continue;
    auto tx = metrics.find("tx_bytes");
    if (tx == metrics.end() || !tx->second.last) continue;  // not read inside the window
    QueueCongestion q;
    q.source = source;
    q.tx_bytes = difference(tx->second);
    if (auto it = metrics.find("drops"); it != metrics.end()) q.drops = difference(it->second);
    if (auto it = metrics.find("ecn_marked"); it != metrics.end()) {
      q.ecn_marked = difference(it->second);
    }
    if (auto it = metrics.find("backlog_bytes"); it != metrics.end()) {
      q.peak_backlog_bytes = it->second.peak;
    }
    auto rank = [](const QueueCongestion& c) {
      return std::make_tuple(c.drops, c.ecn_marked, c.tx_bytes);
    };
    if (!hottest || rank(q) > rank(*hottest)) hottest = q;
  }
  return hottest;
}

nlohmann::json toJson(const QueueCongestion& congestion) {
  return {{"source", congestion.source},
          {"tx_bytes", congestion.tx_bytes},
          {"drops", congestion.drops},
          {"ecn_marked", congestion.ecn_marked},
          {"peak_backlog_bytes", congestion.peak_backlog_bytes}};
}

std::optional<TrafficShare> trafficShare(const nlohmann::json& observed) {
  if (!observed.is_object()) return std::nullopt;
  auto goodput = observed.find("source_goodput_mbps");
  auto jain = observed.find("jain_fairness");
  if (goodput == observed.end() || !goodput->is_array() || jain == observed.end() ||
      !jain->is_number()) {
    return std::nullopt;
  }
  TrafficShare share;
  for (const auto& value : *goodput) {
    share.goodput_mbps.push_back(value.is_number() ? value.get<double>() : 0.0);
    share.total_mbps += share.goodput_mbps.back();
  }
  share.jain_fairness = jain->get<double>();
  return share;
}

nlohmann::json toJson(const TrafficShare& share) {
  return {{"goodput_mbps", share.goodput_mbps},
          {"total_mbps", share.total_mbps},
          {"jain_fairness", share.jain_fairness}};
}

std::vector<core::TelemetryPoint> trafficTelemetry(const nlohmann::json& observed,
                                                   const std::string& kind,
                                                   const std::vector<std::string>& source_hosts,
                                                   const std::string& sink_host, double t_ms) {
  std::vector<core::TelemetryPoint> points;
  if (!observed.is_object()) return points;
  auto reportOf = [](const nlohmann::json& generator) -> const nlohmann::json* {
    auto report = generator.find("report");
    return report != generator.end() && report->is_object() ? &*report : nullptr;
  };
  auto sources = observed.find("sources");
  if (sources != observed.end() && sources->is_array()) {
    for (size_t i = 0; i < sources->size() && i < source_hosts.size(); ++i) {
      const nlohmann::json* report = reportOf((*sources)[i]);
      if (report == nullptr || !report->contains("bytes")) continue;
      const std::string source = core::telemetrySourceName(
          core::TelemetrySource::traffic(kind, source_hosts[i], core::TrafficRole::kSource));
      points.push_back({t_ms, source, "sent_bytes", report->value("bytes", int64_t{0})});
      points.push_back({t_ms, source, "flows_connected", report->value("connected", int64_t{0})});
    }
  }
  auto sink = observed.find("sink");
  if (sink != observed.end() && sink->is_object() && !sink_host.empty()) {
    const nlohmann::json* report = reportOf(*sink);
    if (report != nullptr && report->contains("bytes")) {
      points.push_back({t_ms,
                        core::telemetrySourceName(core::TelemetrySource::traffic(
                            kind, sink_host, core::TrafficRole::kSink)),
                        "received_bytes", report->value("bytes", int64_t{0})});
    }
  }
  return points;
}

}  // namespace fabric_chaos::scenarios
