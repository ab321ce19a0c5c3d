// GET /v1/runs/{id}/telemetry: the run's fabric telemetry (switch queues every 100 ms), grouped
// into one series per source and metric, with optional filters so that a dashboard can fetch
// only what is new.

#include <map>

#include "server/api/handlers.h"
#include "server/api/run_lookup.h"
#include "server/api/util.h"

namespace fabric_chaos::api::internal {
namespace {

using nlohmann::json;

// Gauges are read as they are; every other metric is a counter since the queue was made.
bool isGauge(const std::string& metric) { return metric == "backlog_bytes"; }

// "sw0/p3/best_effort" -> {"switch": "sw0", "port": "p3", "queue": "best_effort"}; other shapes
// keep only "source".
json describeSource(const std::string& source) {
  json out = {{"source", source}};
  const size_t a = source.find('/');
  const size_t b = a == std::string::npos ? a : source.find('/', a + 1);
  if (b != std::string::npos && source.find('/', b + 1) == std::string::npos) {
    out["switch"] = source.substr(0, a);
    out["port"] = source.substr(a + 1, b - a - 1);
    out["queue"] = source.substr(b + 1);
  }
  return out;
}

}  // namespace

Response getRunTelemetry(Context& ctx, const Call& call) {
  auto run = runFrom(ctx, call);
  if (!run) return errorResponse(run.status());
  auto after = runMsFrom(call, "after_ms");
  if (!after) return errorResponse(after.status());
  const auto source_filter = call.query.find("source");
  const auto metric_filter = call.query.find("metric");
  auto points = ctx.deps.store->telemetry(run->id);
  if (!points) return errorResponse(points.status());

  // The store returns points ordered by source, metric and time: one pass builds the series.
  json series = json::array();
  std::string current;
  for (const core::TelemetryPoint& p : points.value()) {
    if (source_filter != call.query.end() && p.source != source_filter->second) continue;
    if (metric_filter != call.query.end() && p.metric != metric_filter->second) continue;
    if (after.value() && p.t_ms <= *after.value()) continue;
    const std::string key = p.source + "\n" + p.metric;
    if (series.empty() || key != current) {
      json entry = describeSource(p.source);
      entry["metric"] = p.metric;
      entry["kind"] = isGauge(p.metric) ? "gauge" : "counter";
      entry["t_ms"] = json::array();
      entry["values"] = json::array();
      series.push_back(std::move(entry));
      current = key;
    }
    series.back()["t_ms"].push_back(p.t_ms);
    series.back()["values"].push_back(p.value);
  }
  return jsonResponse(200, json{{"run_id", run->id}, {"series", std::move(series)}});
}

}  // namespace fabric_chaos::api::internal
