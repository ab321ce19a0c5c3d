// The lab switch's telemetry points from qdisc counters (pure): each modelled port's two class
// queues by handle, the ECN marks of marking ports, and nothing for unmodelled ones.

#include "lab/switch_telemetry.h"

#include <gtest/gtest.h>

namespace fabric_chaos::lab {
namespace {

scenarios::Switch modelledSwitch() {
  scenarios::Switch sw{"sw0", "t-sw0", "br0", {"p0", "p1"}, {}, std::nullopt};
  sw.egress = scenarios::EgressModel{100'000'000, 131072, {26}};
  return sw;
}

sys::QdiscCounters queue(const std::string& port, uint32_t handle, uint64_t bytes, uint64_t drops,
                         uint64_t backlog) {
  sys::QdiscCounters q;
  q.ifname = port;
  q.handle = handle;
  q.kind = handle == 0x00010000 ? "htb" : "bfifo";
  q.bytes = bytes;
  q.packets = bytes / 1000;
  q.drops = drops;
  q.backlog_bytes = backlog;
  return q;
}

TEST(SwitchTelemetryTest, EveryModelledQueueGivesItsCounters) {
  const std::vector<sys::QdiscCounters> qdiscs = {
      queue("p0", 0x00010000, 999, 0, 0),  // the htb root: not a class queue
      queue("p0", 0x00100000, 5000, 1, 3000), queue("p0", 0x00200000, 70000, 12, 64000),
      queue("p1", 0x00200000, 8000, 0, 0),  // p1's lossless queue is missing: skipped
      queue("eth9", 0x00200000, 1, 1, 1),   // not a port of the switch
  };
  const auto points = switchTelemetryPoints(modelledSwitch(), qdiscs, {});
  ASSERT_EQ(points.size(), 12u);
  EXPECT_EQ(points[0].source, "sw0/p0/lossless");
  EXPECT_EQ(points[0].metric, "tx_bytes");
  EXPECT_EQ(points[0].value, 5000);
  EXPECT_EQ(points[1].metric, "tx_packets");
  EXPECT_EQ(points[2].metric, "drops");
  EXPECT_EQ(points[2].value, 1);
  EXPECT_EQ(points[3].metric, "backlog_bytes");
  EXPECT_EQ(points[3].value, 3000);
  EXPECT_EQ(points[4].source, "sw0/p0/best_effort");
  EXPECT_EQ(points[6].value, 12);
  EXPECT_EQ(points[8].source, "sw0/p1/best_effort");
  EXPECT_EQ(points[8].value, 8000);
  for (const auto& p : points) EXPECT_EQ(p.t_ms, 0) << "the caller stamps the time";
}

TEST(SwitchTelemetryTest, MarkingPortsAddTheirEcnCountsPerQueue) {
  const std::vector<sys::QdiscCounters> qdiscs = {queue("p0", 0x00100000, 10, 0, 0),
                                                  queue("p0", 0x00200000, 20, 0, 0)};
  const auto points = switchTelemetryPoints(modelledSwitch(), qdiscs, {{"p0", 7, 41}});
  ASSERT_EQ(points.size(), 10u);
  EXPECT_EQ(points[4].metric, "ecn_marked");
  EXPECT_EQ(points[4].value, 7);
  EXPECT_EQ(points[9].metric, "ecn_marked");
  EXPECT_EQ(points[9].value, 41);
}

TEST(SwitchTelemetryTest, APfcSwitchsLosslessQueuesCarryItsAgentsCounters) {
  scenarios::Switch sw = modelledSwitch();
  sw.egress->pfc = scenarios::PfcHonouring{3};
  const nlohmann::json stats = {
      {"ports",
       {{"p0",
         {{"rx_prio3_pause", 4}, {"rx_prio3_pause_duration", 1677696}, {"rx_prio0_pause", 9}}},
        {"p1",
         {{"rx_prio3_pause", 0},
          {"rx_prio3_pause_duration", 0},
          {"pfcwd_prio3_storm_detected", 1},
          {"pfcwd_prio3_dropped_frames", 30},
          {"pfcwd_prio3_last_detected_ns", 5'200'000'000},
          {"pfcwd_prio3_last_restored_ns", 0}}},
        {"p9", {{"rx_prio3_pause", 1}}}}}};
  const auto points = pfcTelemetryPoints(sw, stats);
  ASSERT_EQ(points.size(), 8u);
  EXPECT_EQ(points[0].source, "sw0/p0/lossless");
  EXPECT_EQ(points[0].metric, "pfc_rx_pause");
  EXPECT_EQ(points[0].value, 4);
  EXPECT_EQ(points[1].metric, "pfc_paused_us");
  EXPECT_EQ(points[1].value, 1677696);
  EXPECT_EQ(points[4].source, "sw0/p1/lossless");
  EXPECT_EQ(points[4].metric, "pfcwd_storms");
  EXPECT_EQ(points[5].metric, "pfcwd_dropped_frames");
  EXPECT_EQ(points[5].value, 30);
  // The watchdog's instants as the agent wrote them (the sampler moves them to the run clock).
  EXPECT_EQ(points[6].metric, "pfcwd_detected_at_us");
  EXPECT_EQ(points[6].value, 5'200'000'000);
  EXPECT_EQ(points[7].metric, "pfcwd_restored_at_us");
  EXPECT_EQ(points[7].value, 0);
  // No PFC on the switch, or no document: nothing.
  EXPECT_TRUE(pfcTelemetryPoints(modelledSwitch(), stats).empty());
  EXPECT_TRUE(pfcTelemetryPoints(sw, nlohmann::json()).empty());
}

}  // namespace
}  // namespace fabric_chaos::lab
