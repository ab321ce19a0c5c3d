#pragma once
// serve's Prometheus metrics (GET /metrics, docs/observability.md). Two kinds:
// - measured as they happen: HTTP request latency per route, store write latency per operation
//   (histograms, thread-safe, from prometheus-cpp);
// - read at scrape time from serve's state: runs by state, active faults by kind, the last score
//   of each scenario, live busbw of running runs, and each agent's health and clock offset
//   (a MetricsSnapshot that serve gathers when asked, so nothing goes stale between scrapes).

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace prometheus {
class Registry;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace fabric_chaos::metrics {

struct MetricsSnapshot {
  std::map<std::string, int64_t> runs_by_state;
  std::map<std::string, int64_t> active_faults_by_kind;  // applied and not yet reverted
  struct ScenarioScore {
    std::string scenario;
    int64_t run_id = 0;
    double score = 0;
  };
  std::vector<ScenarioScore> last_scores;
  struct LiveRun {
    int64_t run_id = 0;
    std::string scenario;
    std::string fabric;
    double busbw_gbps = 0;  // of its latest sample (GB/s)
    int active_faults = 0;
  };
  std::vector<LiveRun> live_runs;
  struct AgentHealth {
    std::string fabric;
    std::string host;
    bool up = false;             // it answered
    double clock_offset_ms = 0;  // controller minus agent; only when up
    double round_trip_ms = 0;    // only when up
  };
  std::vector<AgentHealth> agents;
};

class ServeMetrics {
 public:
  // `snapshot` is called once per scrape; `version` labels fabric_chaos_build_info.
  ServeMetrics(std::string version, std::function<MetricsSnapshot()> snapshot);
  ~ServeMetrics();
  ServeMetrics(const ServeMetrics&) = delete;
  ServeMetrics& operator=(const ServeMetrics&) = delete;

  // `route` is a route pattern ("/v1/runs/:id"), never a raw path, so labels stay bounded.
  void observeRequest(const std::string& method, const std::string& route, int status,
                      double seconds);
  void observeStoreWrite(std::string_view operation, double seconds);

  // The exposition in the Prometheus text format (version 0.0.4).
  std::string text() const;

 private:
  std::string version_;
  std::function<MetricsSnapshot()> snapshot_;
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Histogram>* requests_ = nullptr;
  prometheus::Family<prometheus::Histogram>* store_writes_ = nullptr;
};

}  // namespace fabric_chaos::metrics
