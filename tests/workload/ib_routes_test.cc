// The IB probe's route reading against a fake subnet that answers by direct route: the discovery
// (cabling, LIDs, names, a second route to each spine), a sweep's reading and what
// ib/lft_routes.h makes of it when a cable is cut before and after the SM re-routes, the sweep's
// deadline, and the events RouteWatch turns passes into. Pure: no MAD leaves the process.

#include "workload/ib_routes.h"

#include <gtest/gtest.h>

#include "core/clock.h"
#include "tests/workload/fake_ib_subnet.h"
#include "workload/ib_route_watch.h"

namespace fabric_chaos::workload {
namespace {

using testing::FakeIbSubnet;

constexpr int64_t kFarAway = int64_t{1} << 62;

ib::RouteReading readAll(RouteSweep& sweep, SmpReader& smp) {
  auto pass = sweep.advance(smp, kFarAway);
  EXPECT_TRUE(pass.has_value());
  return pass ? pass->reading : ib::RouteReading{};
}

TEST(IbRoutes, DiscoversTheFatTreeFromAnHca) {
  FakeIbSubnet subnet("h1");
  auto map = discoverRoutes(subnet, 20);
  ASSERT_TRUE(map.isOk()) << map.status().message();
  ASSERT_EQ(map->switches.size(), 4u);
  ASSERT_EQ(map->cas.size(), 4u);
  EXPECT_EQ(map->top_lid, 8);
  EXPECT_EQ(map->switches[0].name, "l0");  // the probe's own leaf first
  EXPECT_EQ(map->switches[0].lid, 4);
  EXPECT_EQ(map->switches[0].drpaths.front(), (DirectRoute{1}));
  EXPECT_EQ(map->switches[0].cabled.size(), 4u);
  const ib::RouteNeighbor up = map->switches[0].cabled.at(3);
  EXPECT_TRUE(up.is_switch);
  EXPECT_EQ(up.guid, 0x200000u);  // s0
  EXPECT_EQ(up.port, 1);
  for (const ib::RouteCa& ca : map->cas) {
    if (ca.name != "h2") continue;
    EXPECT_EQ(ca.lid, 7);
    EXPECT_EQ(ca.guid, 0x100005u);  // the port's GUID
    EXPECT_EQ(ca.switch_guid, 0x200003u);
    EXPECT_EQ(ca.switch_port, 1);
  }
  // s0 is reached through l0 port 3, and also the long way round, leaving l0 by port 4.
  const ib::RouteSwitch* s0 = map->findSwitch(0x200000);
  ASSERT_NE(s0, nullptr);
  EXPECT_EQ(s0->name, "s0");
  ASSERT_GE(s0->drpaths.size(), 2u);
  EXPECT_EQ(s0->drpaths[0], (DirectRoute{1, 3}));
  EXPECT_EQ(s0->drpaths[1], (DirectRoute{1, 4, 2, 3}));
}

TEST(IbRoutes, ADiscoveryWithoutASwitchSaysWhy) {
  FakeIbSubnet subnet("h1");
  subnet.cut("h1", 1);
  auto map = discoverRoutes(subnet, 20);
  ASSERT_FALSE(map.isOk());
  EXPECT_EQ(map.status().code(), core::StatusCode::kFailedPrecondition);
  EXPECT_NE(map.status().message().find("nothing answers behind local port 1"), std::string::npos)
      << map.status().message();
}

TEST(IbRoutes, ACutUplinkBreaksFourPairsUntilTheSmReroutes) {
  FakeIbSubnet subnet("h1");
  auto map = discoverRoutes(subnet, 20);
  ASSERT_TRUE(map.isOk());
  RouteSweep sweep(*map, 20);
  const ib::RouteReading healthy = readAll(sweep, subnet);
  ASSERT_EQ(healthy.size(), 4u);
  EXPECT_EQ(healthy.at(0x200002).lft[7], 3);
  EXPECT_TRUE(healthy.at(0x200002).port_active.at(3));
  const ib::RouteVerdict whole = ib::checkRoutes(*map, healthy);
  EXPECT_EQ(whole.pairs, 12);
  EXPECT_EQ(whole.unroutable, 0);
  EXPECT_EQ(whole.unknown, 0);

  // l0-s0 cut: h0 and h1 cannot reach h2 (l0 sends LID 7 to s0), nor h2 and h3 h0 (l1 sends
  // LID 1 to s0, which sends it down the cut cable). s0 is still read, by its second route.
  subnet.cut("l0", 3);
  const ib::RouteReading cut = readAll(sweep, subnet);
  ASSERT_EQ(cut.size(), 4u);
  EXPECT_FALSE(cut.at(0x200000).port_active.at(1));
  const ib::RouteVerdict broken = ib::checkRoutes(*map, cut);
  EXPECT_EQ(broken.unroutable, 4);
  EXPECT_EQ(broken.unknown, 0);
  EXPECT_EQ(broken.first_problem, "h0 -> h2: l0 sends LID 7 out of port 3, which is not active");

  subnet.tablesAroundL0S0();  // the SM's re-route
  const ib::RouteReading rerouted = readAll(sweep, subnet);
  EXPECT_EQ(ib::checkRoutes(*map, rerouted).unroutable, 0);
  const ib::LftDifference difference = ib::lftDifference(*map, healthy, rerouted);
  EXPECT_EQ(difference.compared, 4 * 8);  // 4 switches x (4 HCA LIDs + 4 switch LIDs)
  EXPECT_EQ(difference.changed, 8);
}

TEST(IbRoutes, UnassignedEntriesLoopsAndUnreadableSwitches) {
  FakeIbSubnet subnet("h0");
  auto map = discoverRoutes(subnet, 20);
  ASSERT_TRUE(map.isOk());
  RouteSweep sweep(*map, 20);
  subnet.node("l0").lft[8] = 255;
  ib::RouteVerdict verdict = ib::checkRoutes(*map, readAll(sweep, subnet));
  EXPECT_EQ(verdict.unroutable, 2);  // h0 and h1 to h3
  EXPECT_NE(verdict.first_problem.find("l0 sends LID 8 nowhere (unassigned)"), std::string::npos)
      << verdict.first_problem;

  subnet.node("l0").lft[8] = 3;  // up to s0 ...
  subnet.node("s0").lft[8] = 1;  // ... which sends it back down
  verdict = ib::checkRoutes(*map, readAll(sweep, subnet));
  EXPECT_EQ(verdict.unroutable, 2);
  EXPECT_NE(verdict.first_problem.find("LID 8 loops back to l0"), std::string::npos)
      << verdict.first_problem;

  // s1 unreachable on every route: the pairs through it are unknown, not broken.
  subnet.node("s0").lft[8] = 2;
  subnet.node("l0").lft[8] = 4;
  subnet.cut("l0", 4);
  subnet.cut("l1", 4);
  const ib::RouteReading reading = readAll(sweep, subnet);
  EXPECT_EQ(reading.count(0x200001), 0u);
  verdict = ib::checkRoutes(*map, reading);
  // l0 and l1 themselves say port 4 is down: h0, h1 -> h3 and h2, h3 -> h1 are broken walks.
  EXPECT_EQ(verdict.unknown, 0);
  EXPECT_EQ(verdict.unroutable, 4);
}

TEST(IbRoutes, ASweepStopsAtItsDeadlineAndGoesOnFromThere) {
  FakeIbSubnet subnet("h0");
  auto map = discoverRoutes(subnet, 20);
  ASSERT_TRUE(map.isOk());
  RouteSweep sweep(*map, 20);
  const int before = subnet.queries();
  EXPECT_FALSE(sweep.advance(subnet, core::steadyNowNs() - 1).has_value());
  EXPECT_EQ(subnet.queries(), before);  // a deadline already past reads nothing
  EXPECT_TRUE(sweep.midPass());
  auto pass = sweep.advance(subnet, kFarAway);
  ASSERT_TRUE(pass.has_value());
  EXPECT_FALSE(sweep.midPass());
  EXPECT_EQ(pass->reading.size(), 4u);
  EXPECT_GT(pass->duration_ns, 0);
  // 4 switches x (1 LFT block + their cabled ports: 4 + 4 + 2 + 2)
  EXPECT_EQ(subnet.queries() - before, 4 + 12);
}

TEST(IbRoutes, TheWatchReportsTheFirstPassABreakItsEndAndRewrites) {
  FakeIbSubnet subnet("h1");
  auto map = discoverRoutes(subnet, 20);
  ASSERT_TRUE(map.isOk());
  RouteSweep sweep(*map, 20);
  RouteWatch watch(*map);
  auto events = watch.onPass(readAll(sweep, subnet), 1'000'000'000, 800'000);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, kEventRoutesChecked);
  EXPECT_EQ(events[0].detail["pairs"], 12);
  EXPECT_EQ(events[0].detail["entries"], 32);
  EXPECT_EQ(events[0].detail["pass_ms"], 0.8);
  EXPECT_TRUE(watch.onPass(readAll(sweep, subnet), 1'020'000'000, 800'000).empty());

  subnet.cut("l0", 3);
  events = watch.onPass(readAll(sweep, subnet), 1'040'000'000, 800'000);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, kEventRoutesBroken);
  EXPECT_EQ(events[0].detail["unroutable"], 4);
  EXPECT_EQ(events[0].detail["pairs"], 12);
  // Still broken: said once.
  EXPECT_TRUE(watch.onPass(readAll(sweep, subnet), 1'060'000'000, 800'000).empty());

  subnet.tablesAroundL0S0();
  events = watch.onPass(readAll(sweep, subnet), 1'075'000'000, 800'000);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, kEventLftChanged);
  EXPECT_EQ(events[0].detail["entries"], 8);
  EXPECT_EQ(events[0].detail["of"], 32);
  EXPECT_EQ(events[0].detail["from_first"], 8);
  EXPECT_EQ(events[1].kind, kEventRoutesRestored);
  EXPECT_EQ(events[1].detail["after_ms"], 35.0);

  // The cable back and the original tables restored: rewritten again, nothing differs now.
  subnet.mend("l0", 3);
  subnet.minHopTables();
  events = watch.onPass(readAll(sweep, subnet), 2'000'000'000, 800'000);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, kEventLftChanged);
  EXPECT_EQ(events[0].detail["from_first"], 0);
}

}  // namespace
}  // namespace fabric_chaos::workload
