// GET /v1/runs/{id}/telemetry: the run's fabric telemetry (switch queues every 100 ms, traffic
// generators' and RDMA ports' counters), grouped
// into one series per source and metric, with optional filters so that a dashboard can fetch
// only what is new.

#include <map>

#include "core/telemetry.h"
#include "server/api/handlers.h"
#include "server/api/run_lookup.h"
#include "server/api/util.h"

namespace fabric_chaos::api::internal {
namespace {

using nlohmann::json;

// The source's name and what it names (core/telemetry.h): "type" and, per type, its parts. A
// name no source type has keeps only "source".
json describeSource(const std::string& name) {
  json out = {{"source", name}};
  const auto source = core::parseTelemetrySource(name);
  if (!source) return out;
  out["type"] = core::describe(source->type);
  switch (source->type) {
    case core::TelemetrySourceType::kSwitchQueue:
      out["switch"] = source->node;
      out["port"] = source->port;
      out["queue"] = source->detail;
      break;
    case core::TelemetrySourceType::kTraffic:
      out["host"] = source->node;
      out["fault_kind"] = source->detail;
      out["role"] = core::describe(source->role);
      break;
    case core::TelemetrySourceType::kRdmaPort:
      out["host"] = source->node;
      out["device"] = source->detail;
      out["port"] = std::stoi(source->port);
      break;
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
      entry["kind"] = core::isGaugeMetric(p.metric) ? "gauge" : "counter";
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
