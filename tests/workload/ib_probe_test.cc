// The IB probe's loop against a scripted subnet (a fake IbManagement): the line protocol it
// writes, one iteration per healthy period, an outage as one long iteration between
// sa_unavailable and sa_available, and the master and LID changes it reports. Real clock, 2 ms
// periods; only order and containment are asserted, never durations against wall time.

#include "workload/ib_probe.h"

#include <gtest/gtest.h>

#include <sstream>
#include <vector>

#include "tests/workload/fake_ib_subnet.h"
#include "workload/ib_route_watch.h"
#include "workload/report.h"

namespace fabric_chaos::workload {
namespace {

struct ScriptedRound {
  bool answers = true;  // the SM answers SMInfo and the SA the PathRecord
  uint64_t master_guid = 0x100001;
  uint16_t lid = 8;
  ib::SmState state = ib::SmState::kMaster;
};

class ScriptedSubnet : public IbManagement {
 public:
  ScriptedSubnet(std::vector<ScriptedRound> rounds, std::atomic<bool>& stop)
      : rounds_(std::move(rounds)), stop_(stop) {}
  core::Result<LocalIbPort> localPort() override {
    if (next_ >= rounds_.size()) {
      stop_ = true;  // the script is over
      return core::Status(core::StatusCode::kUnavailable, "script over");
    }
    current_ = rounds_[next_++];
    return LocalIbPort{current_.lid, 1, 0x100007};
  }
  core::Result<ib::SmInfoReply> smInfo(uint16_t lid) override {
    if (!current_.answers) return core::Status(core::StatusCode::kTimeout, "no SMInfo answer");
    return ib::SmInfoReply{lid, current_.master_guid, 1, 14, current_.state};
  }
  core::Result<uint16_t> pathRecord(uint16_t, uint64_t dest) override {
    EXPECT_EQ(dest, 0x100001u);
    return uint16_t{1};
  }

 private:
  std::vector<ScriptedRound> rounds_;
  std::atomic<bool>& stop_;
  size_t next_ = 0;
  ScriptedRound current_;
};

// `smp`: with it, the probe also reads routes, a pass every millisecond of the idle time that its
// 2 ms margin before each round leaves (so periods of 8 ms).
std::vector<ReportLine> run(const std::vector<ScriptedRound>& script, SmpReader* smp = nullptr) {
  std::atomic<bool> stop{false};
  ScriptedSubnet subnet(script, stop);
  std::ostringstream out;
  IbProbeOptions options;
  options.rank = 2;
  options.peer_guid = 0x100001;
  options.period_ms = smp != nullptr ? 8 : 2;
  options.max_duration_ms = 60000;
  options.check_routes = smp != nullptr;
  options.routes_period_ms = 1;
  EXPECT_EQ(runIbProbe(options, subnet, smp, out, stop), 0);
  std::vector<ReportLine> lines;
  std::istringstream text(out.str());
  for (std::string line; std::getline(text, line);) {
    auto decoded = decodeReportLine(line);
    EXPECT_TRUE(decoded.isOk()) << line;
    if (decoded.isOk()) lines.push_back(*decoded);
  }
  return lines;
}

std::vector<RawSample> samplesOf(const std::vector<ReportLine>& lines) {
  std::vector<RawSample> out;
  for (const ReportLine& l : lines) {
    if (l.type == ReportLine::Type::kSamples)
      out.insert(out.end(), l.samples.begin(), l.samples.end());
  }
  return out;
}

std::vector<ReportLine> eventsOf(const std::vector<ReportLine>& lines) {
  std::vector<ReportLine> out;
  for (const ReportLine& l : lines) {
    if (l.type == ReportLine::Type::kEvent) out.push_back(l);
  }
  return out;
}

TEST(IbProbe, AHealthySubnetGivesOneIterationPerPeriodAndNoEvents) {
  const auto lines = run(std::vector<ScriptedRound>(6));
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines.front().type, ReportLine::Type::kReady);
  EXPECT_EQ(lines.front().rank, 2);
  EXPECT_EQ(lines.back().type, ReportLine::Type::kDone);
  const auto samples = samplesOf(lines);
  ASSERT_EQ(samples.size(), 6u);  // each round's iteration ends when the next round begins
  for (size_t i = 0; i < samples.size(); ++i) {
    EXPECT_EQ(samples[i].iteration, static_cast<int64_t>(i));
    EXPECT_EQ(samples[i].bytes, kIbProbeBytesPerRound);
    EXPECT_GE(samples[i].duration_ns, 2'000'000) << "an iteration spans at least its period";
    if (i > 0) {
      EXPECT_EQ(samples[i].start_ns, samples[i - 1].start_ns + samples[i - 1].duration_ns);
    }
  }
  EXPECT_TRUE(eventsOf(lines).empty());
  EXPECT_EQ(lines.back().iterations, 6);
}

TEST(IbProbe, AnOutageIsOneIterationBetweenUnavailableAndAvailable) {
  ScriptedRound down;
  down.answers = false;
  ScriptedRound discovering;
  discovering.state = ib::SmState::kDiscovering;
  ScriptedRound new_master;
  new_master.master_guid = 0x100005;
  ScriptedRound moved = new_master;
  moved.lid = 9;
  const auto lines = run({{}, {}, down, down, discovering, new_master, moved});
  const auto events = eventsOf(lines);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].kind, kEventSaUnavailable);
  EXPECT_EQ(events[0].detail["iteration"], 2);
  EXPECT_NE(events[0].detail["reason"].get<std::string>().find("SMInfo"), std::string::npos);
  EXPECT_EQ(events[1].kind, kEventSaAvailable);
  EXPECT_GT(events[1].detail["after_ms"].get<double>(), 0);
  EXPECT_EQ(events[2].kind, kEventSmMasterChanged);
  EXPECT_EQ(events[2].detail["from"], "0x0000000000100001");
  EXPECT_EQ(events[2].detail["to"], "0x0000000000100005");
  EXPECT_EQ(events[3].kind, kEventLidChanged);
  EXPECT_EQ(events[3].detail["from"], 8);
  EXPECT_EQ(events[3].detail["to"], 9);
  // Iterations 0 and 1; iteration 2 spans the three failed rounds (a DISCOVERING SM is no
  // master) up to the new master's; iteration 3 is the moved LID's round.
  const auto samples = samplesOf(lines);
  ASSERT_EQ(samples.size(), 4u);
  EXPECT_EQ(samples[2].iteration, 2);
  EXPECT_GE(samples[2].duration_ns, 3 * 2'000'000);
  EXPECT_LE(samples[2].start_ns, events[0].t_ns);
  EXPECT_GE(samples[2].start_ns + samples[2].duration_ns, events[1].t_ns);
}

TEST(IbProbe, WithRoutesItReportsWhatItWatchesAfterReadyAndKeepsOneIterationPerPeriod) {
  testing::FakeIbSubnet routes("h3");
  const auto lines = run(std::vector<ScriptedRound>(20), &routes);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines.front().type, ReportLine::Type::kReady);
  const auto events = eventsOf(lines);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0].kind, kEventRoutesChecked);
  EXPECT_EQ(events[0].detail["switches"], 4);
  EXPECT_EQ(events[0].detail["pairs"], 12);
  // A healthy subnet: nothing between the first pass and the summary as the probe stops.
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].kind, kEventRoutesSummary);
  EXPECT_GT(events[1].detail["passes"].get<int>(), 5);
  EXPECT_GE(events[1].detail["max_pass_ms"].get<double>(),
            events[1].detail["mean_pass_ms"].get<double>());
  EXPECT_EQ(samplesOf(lines).size(), 20u);
  // A pass every millisecond of idle time, over 20 periods: many passes, each 16 reads.
  EXPECT_GT(routes.queries(), 5 * 16);
}

TEST(IbProbe, ARouteDiscoveryThatFailsIsReportedAndTheProbeGoesOn) {
  testing::FakeIbSubnet routes("h3");
  routes.cut("h3", 1);
  const auto lines = run(std::vector<ScriptedRound>(4), &routes);
  const auto events = eventsOf(lines);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, kEventRoutesUnavailable);
  EXPECT_NE(events[0].detail["reason"].get<std::string>().find("nothing answers behind local port"),
            std::string::npos);
  EXPECT_EQ(samplesOf(lines).size(), 4u);
}

}  // namespace
}  // namespace fabric_chaos::workload
