#include "app/serve_metrics.h"

#include "core/log.h"

namespace fabric_chaos::app {

namespace {

void warnScrape(const core::Status& status) { core::logWarn("metrics: " + status.toString()); }

}  // namespace

metrics::MetricsSnapshot gatherMetrics(const MetricsSources& sources) {
  metrics::MetricsSnapshot snapshot;
  if (auto counts = sources.store->runCountsByState(); counts.isOk()) {
    snapshot.runs_by_state = std::move(counts).value();
  } else {
    warnScrape(counts.status());
  }
  if (auto journal = sources.store->unrevertedJournal(); journal.isOk()) {
    for (const auto& entry : *journal) {
      if (entry.state != "applied") continue;  // intents may never have reached the fabric
      ++snapshot.active_faults_by_kind[entry.fault.value("kind", "unknown")];
    }
  } else {
    warnScrape(journal.status());
  }
  if (auto scores = sources.store->lastScores(); scores.isOk()) {
    for (const auto& score : *scores) {
      snapshot.last_scores.push_back({score.scenario, score.run_id, score.score});
    }
  } else {
    warnScrape(scores.status());
  }
  if (auto unfinished = sources.store->unfinishedRuns(); unfinished.isOk()) {
    for (const auto& run : *unfinished) {
      auto live = sources.engine->live(run.id);
      if (!live) continue;  // queued, or finishing as we look
      snapshot.live_runs.push_back(
          {run.id, run.scenario_name, run.fabric, live->last_busbw_gbps, live->active_faults});
    }
  } else {
    warnScrape(unfinished.status());
  }
  for (const auto& fabric : sources.catalog->list()) {
    for (const auto& report : sources.fabric_agents->describe(fabric)) {
      snapshot.agents.push_back({fabric.name, report.host, report.status.isOk(),
                                 report.clock_offset_ms, report.round_trip_ms});
    }
  }
  return snapshot;
}

}  // namespace fabric_chaos::app
