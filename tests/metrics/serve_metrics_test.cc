// ServeMetrics' exposition, line by line: the scrape-time families from a snapshot, the request
// and store-write histograms, label escaping, and families listed even when empty.

#include "server/metrics/serve_metrics.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace fabric_chaos::metrics {
namespace {

bool hasLine(const std::string& text, const std::string& line) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l == line) return true;
  }
  return false;
}

TEST(ServeMetrics, ExportsTheSnapshotAsGaugesWithTheirLabels) {
  MetricsSnapshot snapshot;
  snapshot.runs_by_state = {{"passed", 3}, {"running", 1}};
  snapshot.active_faults_by_kind = {{"link_flap", 2}};
  snapshot.last_scores = {{"link-flap", 17, 88.5}};
  snapshot.live_runs = {{18, "pfc-storm", "vm-lab", 1.25, 1}};
  snapshot.agents = {{"vm-lab", "vm1", true, 12.5, 3}, {"vm-lab", "vm2", false, 0, 0}};
  ServeMetrics metrics("1.2.3", [&] { return snapshot; });
  const std::string text = metrics.text();

  EXPECT_TRUE(hasLine(text, "fabric_chaos_build_info{version=\"1.2.3\"} 1")) << text;
  EXPECT_TRUE(hasLine(text, "# TYPE fabric_chaos_runs gauge")) << text;
  EXPECT_TRUE(hasLine(text, "fabric_chaos_runs{state=\"passed\"} 3")) << text;
  EXPECT_TRUE(hasLine(text, "fabric_chaos_runs{state=\"running\"} 1")) << text;
  EXPECT_TRUE(hasLine(text, "fabric_chaos_active_faults{kind=\"link_flap\"} 2")) << text;
  EXPECT_TRUE(hasLine(text, "fabric_chaos_scenario_last_score{scenario=\"link-flap\"} 88.5"))
      << text;
  EXPECT_TRUE(hasLine(text, "fabric_chaos_scenario_last_run_id{scenario=\"link-flap\"} 17"))
      << text;
  // busbw in bytes per second, the Prometheus base unit.
  EXPECT_TRUE(hasLine(text,
                      "fabric_chaos_run_busbw_bytes_per_second{fabric=\"vm-lab\",run_id=\"18\","
                      "scenario=\"pfc-storm\"} 1250000000"))
      << text;
  EXPECT_TRUE(hasLine(text, "fabric_chaos_agent_up{fabric=\"vm-lab\",host=\"vm1\"} 1")) << text;
  EXPECT_TRUE(hasLine(text, "fabric_chaos_agent_up{fabric=\"vm-lab\",host=\"vm2\"} 0")) << text;
  EXPECT_TRUE(hasLine(
      text, "fabric_chaos_agent_clock_offset_seconds{fabric=\"vm-lab\",host=\"vm1\"} 0.0125"))
      << text;
  // An agent that did not answer has no offset to report.
  EXPECT_EQ(text.find("fabric_chaos_agent_clock_offset_seconds{fabric=\"vm-lab\",host=\"vm2\"}"),
            std::string::npos)
      << text;
}

TEST(ServeMetrics, ListsEveryFamilyEvenWithNothingToReport) {
  ServeMetrics metrics("1.2.3", [] { return MetricsSnapshot{}; });
  const std::string text = metrics.text();
  for (const char* family :
       {"fabric_chaos_runs", "fabric_chaos_active_faults", "fabric_chaos_scenario_last_score",
        "fabric_chaos_run_busbw_bytes_per_second", "fabric_chaos_agent_up",
        "fabric_chaos_agent_clock_offset_seconds", "fabric_chaos_http_request_duration_seconds",
        "fabric_chaos_store_write_duration_seconds"}) {
    EXPECT_NE(text.find(std::string("# TYPE ") + family + " "), std::string::npos) << family << "\n"
                                                                                   << text;
  }
}

TEST(ServeMetrics, HistogramsCountRequestsByRouteAndWritesByOperation) {
  ServeMetrics metrics("1.2.3", nullptr);
  metrics.observeRequest("GET", "/v1/runs/:id", 200, 0.003);
  metrics.observeRequest("GET", "/v1/runs/:id", 200, 0.2);
  metrics.observeRequest("GET", "/v1/runs/:id", 404, 0.001);
  metrics.observeStoreWrite("append_samples", 0.004);
  const std::string text = metrics.text();
  const std::string ok = "code=\"200\",method=\"GET\",route=\"/v1/runs/:id\"";
  EXPECT_TRUE(hasLine(text, "fabric_chaos_http_request_duration_seconds_count{" + ok + "} 2"))
      << text;
  EXPECT_TRUE(
      hasLine(text, "fabric_chaos_http_request_duration_seconds_bucket{" + ok + ",le=\"0.005\"} 1"))
      << text;
  EXPECT_TRUE(
      hasLine(text, "fabric_chaos_http_request_duration_seconds_bucket{" + ok + ",le=\"0.25\"} 2"))
      << text;
  EXPECT_TRUE(hasLine(text,
                      "fabric_chaos_http_request_duration_seconds_count{code=\"404\",method="
                      "\"GET\",route=\"/v1/runs/:id\"} 1"))
      << text;
  EXPECT_TRUE(hasLine(
      text, "fabric_chaos_store_write_duration_seconds_count{operation=\"append_samples\"} 1"))
      << text;
}

TEST(ServeMetrics, EscapesLabelValuesAsTheFormatRequires) {
  MetricsSnapshot snapshot;
  snapshot.last_scores = {{"quote\" back\\slash\nline", 1, 50}};
  ServeMetrics metrics("v", [&] { return snapshot; });
  EXPECT_TRUE(
      hasLine(metrics.text(),
              "fabric_chaos_scenario_last_score{scenario=\"quote\\\" back\\\\slash\\nline\"}"
              " 50"))
      << metrics.text();
}

TEST(ServeMetrics, ObservationsFromManyThreadsAreAllCounted) {
  ServeMetrics metrics("v", nullptr);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&metrics, t] {
      for (int i = 0; i < 1000; ++i) {
        metrics.observeRequest("GET", t % 2 == 0 ? "/healthz" : "/v1/runs", 200, 0.001);
        metrics.observeStoreWrite("append_event", 0.001);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const std::string text = metrics.text();
  EXPECT_TRUE(hasLine(text,
                      "fabric_chaos_http_request_duration_seconds_count{code=\"200\",method="
                      "\"GET\",route=\"/healthz\"} 4000"))
      << text;
  EXPECT_TRUE(hasLine(
      text, "fabric_chaos_store_write_duration_seconds_count{operation=\"append_event\"} 8000"))
      << text;
}

}  // namespace
}  // namespace fabric_chaos::metrics
