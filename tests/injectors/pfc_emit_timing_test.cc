// The emitter's clock arithmetic (injectors/pfc/pfc_emit_timing.h): absolute deadlines, the
// on/off pattern, the bounded catch-up after a late wake-up, gap percentiles and the JSON stats
// line. Times are made-up nanoseconds.
#include "injectors/pfc/pfc_emit_timing.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <vector>

namespace fabric_chaos::injectors {
namespace {

constexpr int64_t kUs = 1000;
constexpr int64_t kMs = 1'000'000;
constexpr int64_t kStart = 5'000 * kMs;  // an arbitrary CLOCK_MONOTONIC origin

TEST(PfcPacer, OnTimeWakeUpsSendOneFrameEach) {
  PfcPacer pacer(kStart, 1000 * kUs);
  EXPECT_EQ(pacer.nextDeadline(), kStart);
  for (int k = 0; k < 5; ++k) {
    const int64_t deadline = kStart + k * 1000 * kUs;
    EXPECT_EQ(pacer.nextDeadline(), deadline);
    auto due = pacer.due(deadline + 3 * kUs);  // a few us of wake-up latency
    EXPECT_EQ(due.frames, 1) << k;
    EXPECT_EQ(due.skipped, 0) << k;
  }
  EXPECT_EQ(pacer.nextDeadline(), kStart + 5000 * kUs);
}

TEST(PfcPacer, AnEarlyWakeUpSendsNothing) {
  PfcPacer pacer(kStart, 1000 * kUs);
  ASSERT_EQ(pacer.due(kStart).frames, 1);
  auto early = pacer.due(kStart + 999 * kUs);
  EXPECT_EQ(early.frames, 0);
  EXPECT_EQ(pacer.nextDeadline(), kStart + 1000 * kUs);
}

TEST(PfcPacer, LateWakeUpsCatchUpAtMostABurstAndSkipTheRest) {
  PfcPacer pacer(kStart, 100 * kUs);
  ASSERT_EQ(pacer.due(kStart).frames, 1);
  // 3.5 periods late: deadlines at 100, 200, 300 us are owed.
  auto late = pacer.due(kStart + 350 * kUs);
  EXPECT_EQ(late.frames, 3);
  EXPECT_EQ(late.skipped, 0);
  EXPECT_EQ(pacer.nextDeadline(), kStart + 400 * kUs);
  // 10 ms late (a stop of the whole machine): 100 owed, a burst of 8, the rest skipped, and the
  // schedule goes on from the next deadline, not from the missed ones.
  auto very_late = pacer.due(kStart + 10'350 * kUs);
  EXPECT_EQ(very_late.frames, kMaxPfcBurstFrames);
  EXPECT_EQ(very_late.frames + very_late.skipped, 100);  // 400, 500, ..., 10300 us
  EXPECT_EQ(pacer.nextDeadline(), kStart + 10'400 * kUs);
}

TEST(PfcPacer, OnOffPattern) {
  // 1 ms period, 3.5 ms on, 6.5 ms off: frames at 0, 1, 2, 3 ms of every 10 ms cycle.
  PfcPacer pacer(kStart, 1 * kMs, 3'500 * kUs, 6'500 * kUs);
  std::vector<int64_t> sent;
  for (int64_t t = kStart; t < kStart + 25 * kMs;) {
    auto due = pacer.due(t);
    for (int i = 0; i < due.frames; ++i) sent.push_back((t - kStart) / kUs);
    EXPECT_EQ(due.skipped, 0);
    t = pacer.nextDeadline();
  }
  const std::vector<int64_t> expected = {0,     1000,  2000,  3000,  10000, 11000,
                                         12000, 13000, 20000, 21000, 22000, 23000};
  EXPECT_EQ(sent, expected);
}

TEST(PfcPacer, OnOffWithAPeriodThatDividesTheOnPhaseExactly) {
  // 2 ms on: frames at 0 and 1 ms; 2 ms is already the off phase.
  PfcPacer pacer(kStart, 1 * kMs, 2 * kMs, 3 * kMs);
  ASSERT_EQ(pacer.due(kStart).frames, 1);
  ASSERT_EQ(pacer.nextDeadline(), kStart + 1 * kMs);
  ASSERT_EQ(pacer.due(kStart + 1 * kMs).frames, 1);
  EXPECT_EQ(pacer.nextDeadline(), kStart + 5 * kMs);
}

TEST(PfcPacer, ALateWakeUpAcrossAnOffPhaseOwesOnlyTheOnDeadlines) {
  PfcPacer pacer(kStart, 1 * kMs, 3'500 * kUs, 6'500 * kUs);
  ASSERT_EQ(pacer.due(kStart).frames, 1);
  // Woken only at 10.5 ms: 1, 2, 3 ms and 10 ms were due; the off phase owes nothing.
  auto due = pacer.due(kStart + 10'500 * kUs);
  EXPECT_EQ(due.frames, 4);
  EXPECT_EQ(due.skipped, 0);
  EXPECT_EQ(pacer.nextDeadline(), kStart + 11 * kMs);
  // Woken only at 15 ms, in the off phase: 11, 12 and 13 ms were owed; next is the next cycle.
  auto off = pacer.due(kStart + 15 * kMs);
  EXPECT_EQ(off.frames, 3);
  EXPECT_EQ(pacer.nextDeadline(), kStart + 20 * kMs);
}

TEST(GapHistogram, Quantiles) {
  GapHistogram h;
  EXPECT_EQ(h.quantileNs(0.5), 0);
  EXPECT_EQ(h.maxNs(), 0);
  for (int i = 0; i < 98; ++i) h.record(1000 * kUs);
  h.record(1500 * kUs);
  h.record(9000 * kUs);
  EXPECT_EQ(h.count(), 100);
  EXPECT_NEAR(h.quantileNs(0.5), 1000 * kUs, 1000 * kUs * 0.008);
  EXPECT_NEAR(h.quantileNs(0.99), 1500 * kUs, 1500 * kUs * 0.008);
  EXPECT_EQ(h.maxNs(), 9000 * kUs);
  EXPECT_EQ(h.quantileNs(1.0), 9000 * kUs);  // never above the max
}

TEST(GapHistogram, SmallAndHugeValues) {
  GapHistogram h;
  h.record(0);
  h.record(5);
  h.record(127);
  h.record(int64_t{1} << 61);
  EXPECT_EQ(h.quantileNs(0.25), 0);
  EXPECT_EQ(h.quantileNs(0.5), 5);
  EXPECT_EQ(h.quantileNs(0.75), 127);
  EXPECT_NEAR(static_cast<double>(h.quantileNs(1.0)), static_cast<double>(int64_t{1} << 61),
              static_cast<double>(int64_t{1} << 61) * 0.008);
  h.record(-3);  // a clock that went backwards counts as 0
  EXPECT_EQ(h.count(), 5);
}

TEST(GapHistogram, RelativeErrorStaysUnderOnePercent) {
  for (int64_t v = 130; v < int64_t{1} << 40; v = v * 7 / 5 + 13) {
    GapHistogram h;
    h.record(v);
    h.record(v + 1);  // the max is v + 1, so the middle of v's bucket is what shows
    const double got = static_cast<double>(h.quantileNs(0.5));
    EXPECT_NEAR(got, static_cast<double>(v), static_cast<double>(v) * 0.008) << v;
  }
}

TEST(PfcEmitRecorder, JsonLine) {
  PfcEmitRecorder r(kStart, 1000 * kUs);
  nlohmann::json empty = nlohmann::json::parse(r.jsonLine(kStart, false));
  EXPECT_EQ(empty["frames"], 0);
  EXPECT_EQ(empty["gap_us"]["p50"], 0);
  EXPECT_EQ(empty["period_us"], 1000);
  EXPECT_FALSE(empty.contains("final"));

  r.sent(kStart);
  r.sent(kStart + 1000 * kUs);
  r.sent(kStart + 2001 * kUs);
  r.sendFailed();
  r.skipped(3);
  r.sent(kStart + 2500 * kUs, /*timed=*/false);  // the XON: a frame, not a gap
  const std::string line = r.jsonLine(kStart + 2600 * kUs, true);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["frames"], 4);
  EXPECT_EQ(j["send_errors"], 1);
  EXPECT_EQ(j["skipped"], 3);
  EXPECT_EQ(j["elapsed_ms"], 2);
  EXPECT_NEAR(j["gap_us"]["p50"].get<double>(), 1000, 8);
  EXPECT_NEAR(j["gap_us"]["p99"].get<double>(), 1001, 8);
  EXPECT_EQ(j["gap_us"]["max"], 1001);
  EXPECT_EQ(j["period_us"], 1000);
  EXPECT_EQ(j["final"], true);
  EXPECT_EQ(r.gaps().count(), 2);
}

TEST(PfcEmitRecorder, FractionalPeriod) {
  PfcEmitRecorder r(kStart, 167'769);
  nlohmann::json j = nlohmann::json::parse(r.jsonLine(kStart, false));
  EXPECT_DOUBLE_EQ(j["period_us"].get<double>(), 167.769);
}

}  // namespace
}  // namespace fabric_chaos::injectors
