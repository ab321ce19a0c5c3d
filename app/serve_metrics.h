#pragma once
// What serve's GET /metrics reads at scrape time (server/metrics/serve_metrics.h), gathered from
// its store, engine and fabrics.

#include "scenarios/engine/engine.h"
#include "scenarios/engine/fabric_agents.h"
#include "scenarios/services.h"
#include "server/metrics/serve_metrics.h"
#include "store/store.h"

namespace fabric_chaos::app {

struct MetricsSources {
  store::Store* store = nullptr;
  scenarios::Engine* engine = nullptr;
  scenarios::FabricCatalog* catalog = nullptr;
  scenarios::FabricAgents* fabric_agents = nullptr;  // its reports are cached (cache_ttl_ms)
};

// A store read that fails leaves its families empty and is logged; the scrape still answers.
metrics::MetricsSnapshot gatherMetrics(const MetricsSources& sources);

}  // namespace fabric_chaos::app
