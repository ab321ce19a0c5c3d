#include "server/metrics/serve_metrics.h"

#include <prometheus/client_metric.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <utility>

namespace fabric_chaos::metrics {

namespace {

// From a fast /healthz (well under a millisecond) to a slow listing of a long run's samples.
const prometheus::Histogram::BucketBoundaries kRequestBuckets = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
// A write is a statement or two and, for most, an fsynced commit (about 5 ms on a disk,
// docs/durability.md); waits for the store's lock show up in the upper buckets.
const prometheus::Histogram::BucketBoundaries kStoreBuckets = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1};

struct HistogramName {
  const char* name;
  const char* help;
};
constexpr HistogramName kRequests = {
    "fabric_chaos_http_request_duration_seconds",
    "Time serve took to answer an API request, by method, route and status."};
constexpr HistogramName kStoreWrites = {
    "fabric_chaos_store_write_duration_seconds",
    "Time a store write took its caller (lock wait and commit included), by operation."};

prometheus::Family<prometheus::Histogram>& registerHistogram(prometheus::Registry& registry,
                                                             const HistogramName& which) {
  return prometheus::BuildHistogram().Name(which.name).Help(which.help).Register(registry);
}

prometheus::ClientMetric gauge(double value, std::vector<prometheus::ClientMetric::Label> labels) {
  prometheus::ClientMetric metric;
  metric.label = std::move(labels);
  metric.gauge.value = value;
  return metric;
}

prometheus::MetricFamily gaugeFamily(std::string name, std::string help) {
  prometheus::MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = prometheus::MetricType::Gauge;
  return family;
}

// The families read at scrape time. Families without a series are still listed (with HELP and
// TYPE), so that a dashboard can tell "none" from "not exported".
std::vector<prometheus::MetricFamily> snapshotFamilies(const MetricsSnapshot& snapshot,
                                                       const std::string& version) {
  std::vector<prometheus::MetricFamily> families;

  auto info = gaugeFamily("fabric_chaos_build_info", "The running serve's version (always 1).");
  info.metric.push_back(gauge(1, {{"version", version}}));
  families.push_back(std::move(info));

  auto runs = gaugeFamily("fabric_chaos_runs", "Runs in the store, by state.");
  for (const auto& [state, count] : snapshot.runs_by_state) {
    runs.metric.push_back(gauge(static_cast<double>(count), {{"state", state}}));
  }
  families.push_back(std::move(runs));

  auto faults = gaugeFamily("fabric_chaos_active_faults",
                            "Faults applied and not yet reverted (the journal), by kind.");
  for (const auto& [kind, count] : snapshot.active_faults_by_kind) {
    faults.metric.push_back(gauge(static_cast<double>(count), {{"kind", kind}}));
  }
  families.push_back(std::move(faults));

  auto scores = gaugeFamily("fabric_chaos_scenario_last_score",
                            "Resilience score (0-100) of each scenario's newest scored run.");
  auto score_runs = gaugeFamily("fabric_chaos_scenario_last_run_id",
                                "Id of the run fabric_chaos_scenario_last_score comes from.");
  for (const auto& score : snapshot.last_scores) {
    scores.metric.push_back(gauge(score.score, {{"scenario", score.scenario}}));
    score_runs.metric.push_back(
        gauge(static_cast<double>(score.run_id), {{"scenario", score.scenario}}));
  }
  families.push_back(std::move(scores));
  families.push_back(std::move(score_runs));

  auto busbw = gaugeFamily("fabric_chaos_run_busbw_bytes_per_second",
                           "Bus bandwidth of the latest iteration of each running run.");
  auto run_faults =
      gaugeFamily("fabric_chaos_run_active_faults", "Faults in force in each running run.");
  for (const auto& run : snapshot.live_runs) {
    std::vector<prometheus::ClientMetric::Label> labels = {
        {"fabric", run.fabric}, {"run_id", std::to_string(run.run_id)}, {"scenario", run.scenario}};
    busbw.metric.push_back(gauge(run.busbw_gbps * 1e9, labels));
    run_faults.metric.push_back(gauge(run.active_faults, labels));
  }
  families.push_back(std::move(busbw));
  families.push_back(std::move(run_faults));

  auto up = gaugeFamily("fabric_chaos_agent_up",
                        "1 when the host's agent answered its last health check, else 0.");
  auto offset = gaugeFamily("fabric_chaos_agent_clock_offset_seconds",
                            "Controller clock minus the agent's (positive: the agent is behind); "
                            "uncertain by half the round trip.");
  auto round_trip = gaugeFamily("fabric_chaos_agent_round_trip_seconds",
                                "Round trip of the last health check of the host's agent.");
  for (const auto& agent : snapshot.agents) {
    std::vector<prometheus::ClientMetric::Label> labels = {{"fabric", agent.fabric},
                                                           {"host", agent.host}};
    up.metric.push_back(gauge(agent.up ? 1 : 0, labels));
    if (!agent.up) continue;
    offset.metric.push_back(gauge(agent.clock_offset_ms / 1000, labels));
    round_trip.metric.push_back(gauge(agent.round_trip_ms / 1000, labels));
  }
  families.push_back(std::move(up));
  families.push_back(std::move(offset));
  families.push_back(std::move(round_trip));
  return families;
}

}  // namespace

ServeMetrics::ServeMetrics(std::string version, std::function<MetricsSnapshot()> snapshot)
    : version_(std::move(version)),
      snapshot_(std::move(snapshot)),
      registry_(std::make_shared<prometheus::Registry>()) {
  requests_ = &registerHistogram(*registry_, kRequests);
  store_writes_ = &registerHistogram(*registry_, kStoreWrites);
}

ServeMetrics::~ServeMetrics() = default;

void ServeMetrics::observeRequest(const std::string& method, const std::string& route, int status,
                                  double seconds) {
  requests_
      ->Add({{"method", method}, {"route", route}, {"code", std::to_string(status)}},
            kRequestBuckets)
      .Observe(seconds);
}

void ServeMetrics::observeStoreWrite(std::string_view operation, double seconds) {
  store_writes_->Add({{"operation", std::string(operation)}}, kStoreBuckets).Observe(seconds);
}

std::string ServeMetrics::text() const {
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  // The registry leaves out a histogram nothing has been observed in yet; list it anyway, like
  // the other families, so that "none yet" differs from "not exported".
  for (const HistogramName& histogram : {kRequests, kStoreWrites}) {
    bool listed = false;
    for (const auto& collected : families) listed = listed || collected.name == histogram.name;
    if (listed) continue;
    prometheus::MetricFamily empty;
    empty.name = histogram.name;
    empty.help = histogram.help;
    empty.type = prometheus::MetricType::Histogram;
    families.push_back(std::move(empty));
  }
  MetricsSnapshot snapshot = snapshot_ ? snapshot_() : MetricsSnapshot{};
  for (auto& family : snapshotFamilies(snapshot, version_)) families.push_back(std::move(family));
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace fabric_chaos::metrics
