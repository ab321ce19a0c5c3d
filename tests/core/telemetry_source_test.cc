#include <gtest/gtest.h>

#include "core/telemetry.h"

namespace fabric_chaos::core {
namespace {

struct NameCase {
  TelemetrySource source;
  std::string name;
};

TEST(TelemetrySourceTest, EachTypeHasOneNameAndParsesBack) {
  const std::vector<NameCase> cases = {
      {TelemetrySource::switchQueue("sw0", "p3", "best_effort"), "sw0/p3/best_effort"},
      {TelemetrySource::switchQueue("l0", "up1", "lossless"), "l0/up1/lossless"},
      {TelemetrySource::traffic("incast", "h0", TrafficRole::kSource), "traffic/incast/h0"},
      {TelemetrySource::traffic("incast", "vm1", TrafficRole::kSink), "traffic/incast/vm1/sink"},
      {TelemetrySource::traffic("hot_spot", "h2", TrafficRole::kSource), "traffic/hot_spot/h2"},
      {TelemetrySource::rdmaPort("vm1", "rxe0", 1), "rdma/vm1/rxe0/1"},
  };
  for (const NameCase& c : cases) {
    EXPECT_EQ(telemetrySourceName(c.source), c.name);
    auto parsed = parseTelemetrySource(c.name);
    ASSERT_TRUE(parsed.has_value()) << c.name;
    EXPECT_EQ(*parsed, c.source) << c.name;
  }
}

TEST(TelemetrySourceTest, NamesNoSourceHasAreRefused) {
  for (const char* name : {"", "sw0", "sw0/p3", "sw0//best_effort", "a/b/c/d", "traffic/incast",
                           "traffic/incast/h0/source", "traffic/incast/h0/sink/x", "rdma/vm1/rxe0",
                           "rdma/vm1/rxe0/one", "rdma/vm1/rxe0/1/x", "/p3/best_effort"}) {
    EXPECT_FALSE(parseTelemetrySource(name).has_value()) << name;
  }
}

TEST(TelemetrySourceTest, TypesAndRolesHaveTheApiWords) {
  EXPECT_STREQ(describe(TelemetrySourceType::kSwitchQueue), "switch_queue");
  EXPECT_STREQ(describe(TelemetrySourceType::kTraffic), "traffic");
  EXPECT_STREQ(describe(TelemetrySourceType::kRdmaPort), "rdma_port");
  EXPECT_STREQ(describe(TrafficRole::kSink), "sink");
  EXPECT_STREQ(describe(TrafficRole::kSource), "source");
}

TEST(TelemetrySourceTest, OnlyBacklogConnectedFlowsAndInstantsAreGauges) {
  EXPECT_TRUE(isGaugeMetric("backlog_bytes"));
  EXPECT_TRUE(isGaugeMetric("flows_connected"));
  EXPECT_TRUE(isGaugeMetric("pfcwd_detected_at_us"));
  EXPECT_TRUE(isGaugeMetric("pfcwd_restored_at_us"));
  for (const char* counter :
       {"tx_bytes", "drops", "ecn_marked", "sent_bytes", "received_bytes", "rcvd_pkts",
        "np_cnp_sent", "out_of_seq_request", "pfc_rx_pause", "pfc_paused_us", "pfcwd_storms"}) {
    EXPECT_FALSE(isGaugeMetric(counter)) << counter;
    EXPECT_FALSE(isInstantMetric(counter)) << counter;
  }
}

TEST(TelemetrySourceTest, OnlyTheWatchdogsDetectionAndRestorationAreInstants) {
  EXPECT_TRUE(isInstantMetric("pfcwd_detected_at_us"));
  EXPECT_TRUE(isInstantMetric("pfcwd_restored_at_us"));
  EXPECT_FALSE(isInstantMetric("backlog_bytes"));
  EXPECT_FALSE(isInstantMetric("flows_connected"));
}

}  // namespace
}  // namespace fabric_chaos::core
