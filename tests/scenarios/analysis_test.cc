// Recovery metrics and scoring (docs/scoring.md) on synthetic per-iteration series whose answers
// are known by construction.

#include "scenarios/analysis.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace fabric_chaos::scenarios {
namespace {

using core::Sample;

// Every series: 10 MB allreduce over 2 ranks (busbw factor 1), so a 10 ms collective is exactly
// 1 GB/s; 10 ms of compute between collectives, so the baseline period is 20 ms.
constexpr int64_t kBytes = 10'000'000;
constexpr double kCompute = 10;
constexpr double kEps = 1e-9;

// Generates one rank's iterations from t=0 while start < until_ms: each collective takes
// duration(start) ms and is followed by kCompute ms of compute.
std::vector<Sample> series(int rank, double until_ms, const std::function<double(double)>& duration,
                           int64_t bytes = kBytes) {
  std::vector<Sample> out;
  double t = 0;
  for (int64_t i = 0; t < until_ms; ++i) {
    Sample s;
    s.rank = rank;
    s.iteration = i;
    s.start_ms = t;
    s.duration_ms = duration(t);
    s.bytes = bytes;
    out.push_back(s);
    t += s.duration_ms + kCompute;
  }
  return out;
}

double clean(double) { return 10; }

// The link is down over [1995, 3000]: the collective that starts at 2000 hangs until the link is
// back and completes at 3005; the next one starts at 3015 and is normal again.
double outage(double start) { return start == 2000 ? 1005 : 10; }

// Collectives are twice as slow while they start inside [2000, 3000).
double slowDuringFault(double start) { return start >= 2000 && start < 3000 ? 20 : 10; }

// Collectives are twice as slow from 2000 on: the fault never clears for the workload.
double slowForever(double start) { return start >= 2000 ? 20 : 10; }

AnalysisParams params() {
  AnalysisParams p;
  p.world_size = 2;
  p.baseline_start_ms = 0;
  p.baseline_end_ms = 1000;
  p.observe_end_ms = 5000;
  p.tolerance = 0.10;
  p.recovered_after = 5;
  return p;
}

Gates gates(std::optional<double> min_score, std::optional<double> max_recovery_ms,
            std::optional<double> min_retained, bool require_survival) {
  Gates g;
  g.min_score = min_score;
  g.max_recovery_ms = max_recovery_ms;
  g.min_retained = min_retained;
  g.require_survival = require_survival;
  return g;
}

std::vector<FaultWindow> oneFault() { return {{1, 2000, 3000}}; }
std::vector<FaultWindow> outageFault() { return {{1, 1995, 3000}}; }

std::vector<Sample> concat(std::vector<Sample> a, const std::vector<Sample>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// ---------------------------------------------------------------------------------------------
// Bandwidth: nccl-tests definitions.

struct BandwidthCase {
  const char* name;
  int64_t bytes;
  double duration_ms;
  int world_size;
  double algbw;
  double busbw;
};

class BandwidthTest : public ::testing::TestWithParam<BandwidthCase> {};

TEST_P(BandwidthTest, MatchesNcclTests) {
  const BandwidthCase& c = GetParam();
  EXPECT_NEAR(algBandwidthGBps(c.bytes, c.duration_ms), c.algbw, kEps);
  EXPECT_NEAR(busBandwidthGBps(c.bytes, c.duration_ms, c.world_size), c.busbw, kEps);
}

INSTANTIATE_TEST_SUITE_P(
    Analysis, BandwidthTest,
    ::testing::Values(
        // nccl-tests prints "1048576 ... 1000.0 (us)  1.05 (algbw)  1.57 (busbw)" for 4 ranks.
        BandwidthCase{"OneMiB4Ranks", 1 << 20, 1.0, 4, 1.048576, 1.572864},
        // 1 GiB over 8 ranks in 10 ms: algbw 107.37, busbw 187.90.
        BandwidthCase{"OneGiB8Ranks", 1LL << 30, 10.0, 8, 107.3741824, 187.9048192},
        BandwidthCase{"TwoRanksFactorOne", kBytes, 10.0, 2, 1.0, 1.0},
        BandwidthCase{"SingleRankHasNoBusTraffic", 1 << 20, 1.0, 1, 1.048576, 0.0},
        BandwidthCase{"ZeroDurationGuarded", 1 << 20, 0.0, 4, 0.0, 0.0},
        BandwidthCase{"NegativeDurationGuarded", 1 << 20, -1.0, 4, 0.0, 0.0}),
    [](const auto& info) { return std::string(info.param.name); });

// ---------------------------------------------------------------------------------------------
// Single-rank series with known answers.

struct SeriesCase {
  const char* name;
  std::function<double(double)> duration;
  std::vector<FaultWindow> faults;
  bool recovered;
  std::optional<double> time_to_recover_ms;
  std::optional<double> time_to_detect_ms;
  double worst_busbw_gbps;
  double retained;
  double longest_stall_ms;
  double score;
};

class SeriesTest : public ::testing::TestWithParam<SeriesCase> {};

TEST_P(SeriesTest, StepMetrics) {
  const SeriesCase& c = GetParam();
  const RunAnalysis run = analyzeRun(series(0, 5000, c.duration), c.faults, params(), true);

  EXPECT_EQ(run.note, "");
  EXPECT_EQ(run.baseline_iterations, 50);  // starts 0, 20, ..., 980
  EXPECT_NEAR(run.baseline_busbw_gbps, 1.0, kEps);
  ASSERT_EQ(run.steps.size(), 1u);
  const StepMetrics& m = run.steps[0];
  EXPECT_EQ(m.step, 1);
  EXPECT_NEAR(m.baseline_busbw_gbps, 1.0, kEps);
  EXPECT_TRUE(m.survived);
  EXPECT_EQ(m.recovered, c.recovered);
  ASSERT_EQ(m.time_to_recover_ms.has_value(), c.time_to_recover_ms.has_value());
  if (c.time_to_recover_ms) {
    EXPECT_NEAR(*m.time_to_recover_ms, *c.time_to_recover_ms, kEps);
  }
  ASSERT_EQ(m.time_to_detect_ms.has_value(), c.time_to_detect_ms.has_value());
  if (c.time_to_detect_ms) {
    EXPECT_NEAR(*m.time_to_detect_ms, *c.time_to_detect_ms, kEps);
  }
  EXPECT_NEAR(m.worst_busbw_gbps, c.worst_busbw_gbps, kEps);
  EXPECT_NEAR(m.retained, c.retained, kEps);
  EXPECT_NEAR(m.longest_stall_ms, c.longest_stall_ms, kEps);
  EXPECT_NEAR(m.score, c.score, kEps);
  EXPECT_NEAR(run.score, c.score, kEps);
}

INSTANTIATE_TEST_SUITE_P(
    Analysis, SeriesTest,
    ::testing::Values(
        // Nothing happens: full marks, recovered at the revert, the stall is one baseline period.
        SeriesCase{"Clean", clean, oneFault(), true, 0.0, std::nullopt, 1.0, 1.0, 20.0, 100.0},
        // The worked example of docs/scoring.md.
        //   detect  = 2000 + 10e6 / (1e6 * 0.9) - 1995 = 16.111 ms
        //   recover = 3015 - 3000 = 15 ms
        //   retained = (1000 / 1005) / (1005 / 20) = 0.0198015
        //   score = 100 * (0.5 * 0.0198015 + 0.5 * (1 - 15 / 2000)) = 50.615
        SeriesCase{"FullOutage", outage, outageFault(), true, 15.0, 5.0 + 100.0 / 9.0,
                   10.0 / 1005.0, (1000.0 / 1005.0) / (1005.0 / 20.0), 1010.0,
                   100 * (0.5 * (1000.0 / 1005.0) / (1005.0 / 20.0) + 0.5 * (1 - 15.0 / 2000.0))},
        // 2x slower collectives, same compute: 33 whole iterations plus half of the one straddling
        // the revert, against 50 expected. busbw halves, progress drops only to 0.67.
        SeriesCase{"HalfSpeed", slowDuringFault, oneFault(), true, 20.0, 100.0 / 9.0, 0.5, 0.67,
                   30.0, 100 * (0.5 * 0.67 + 0.5 * (1 - 20.0 / 2000.0))},
        // The slowdown outlives the fault: never recovered, so at most half the score.
        SeriesCase{"NeverRecovers", slowForever, oneFault(), false, std::nullopt, 100.0 / 9.0, 0.5,
                   0.67, 30.0, 50 * 0.67},
        // A collective at exactly the tolerance threshold (busbw 0.9 GB/s) is good: nothing to
        // detect, recovery at the revert. Iterations start at 2000 + 21.111k; 47 fit wholly in
        // the fault and the 48th (2992.2..3003.3) contributes 7.78/11.11: retained 47.7/50.
        SeriesCase{"AtThresholdIsGood",
                   [](double start) { return start >= 2000 && start < 3000 ? 100.0 / 9.0 : 10.0; },
                   oneFault(), true, 0.0, std::nullopt, 0.9, 0.954, 100.0 / 9.0 + 10,
                   100 * (0.5 * 0.954 + 0.5 * 1)}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(AnalysisTest, FullOutageIsWithinOneIterationOfGroundTruth) {
  // Ground truth: the link comes back at 3000, so the workload can be healthy from then on; the
  // analysis may lag by at most one baseline period (20 ms). The fault starts at 1995 and the
  // hung collective starts at 2000, so it is detectably late within one iteration too.
  const RunAnalysis run = analyzeRun(series(0, 5000, outage), outageFault(), params(), true);
  ASSERT_EQ(run.steps.size(), 1u);
  ASSERT_TRUE(run.steps[0].time_to_recover_ms.has_value());
  EXPECT_LE(std::abs(*run.steps[0].time_to_recover_ms - 0.0), 20.0);
  ASSERT_TRUE(run.steps[0].time_to_detect_ms.has_value());
  EXPECT_LE(*run.steps[0].time_to_detect_ms, 20.0);
  EXPECT_NEAR(run.steps[0].score, 50.615074503106, 1e-9);
}

// The numbers printed in the worked example of docs/scoring.md, as printed.
TEST(AnalysisTest, WorkedExampleFromDocs) {
  const RunAnalysis run = analyzeRun(series(0, 5000, outage), outageFault(), params(), true);
  EXPECT_EQ(run.baseline_iterations, 50);
  EXPECT_NEAR(run.baseline_busbw_gbps, 1.0, 1e-12);
  ASSERT_EQ(run.steps.size(), 1u);
  const StepMetrics& m = run.steps[0];
  EXPECT_NEAR(*m.time_to_detect_ms, 16.111, 0.0005);
  EXPECT_NEAR(*m.time_to_recover_ms, 15.0, 1e-12);
  EXPECT_NEAR(m.worst_busbw_gbps, 0.00995, 0.000005);
  EXPECT_NEAR(m.retained, 0.019801, 0.0000005);
  EXPECT_NEAR(m.longest_stall_ms, 1010.0, 1e-12);
  // The hung collective (2000 -> 3005) is the first to complete after the fault's 1995 ms.
  ASSERT_TRUE(m.time_to_first_progress_ms.has_value());
  EXPECT_NEAR(*m.time_to_first_progress_ms, 1010.0, 1e-12);
  EXPECT_NEAR(m.score, 50.615, 0.0005);
  EXPECT_NEAR(run.score, 50.615, 0.0005);

  const std::vector<GateVerdict> verdicts = checkGates(gates(60, 1000, std::nullopt, false), run);
  ASSERT_EQ(verdicts.size(), 2u);
  EXPECT_EQ(verdicts[0].detail, "score 50.6 < 60.0");
  EXPECT_FALSE(verdicts[0].passed);
  EXPECT_EQ(verdicts[1].detail, "every step recovered within 1000.0 ms (slowest 15.0 ms)");
  EXPECT_TRUE(verdicts[1].passed);
  EXPECT_FALSE(allPassed(verdicts));
}

TEST(AnalysisTest, NeverRecoveringScoresAtMostHalf) {
  const RunAnalysis run = analyzeRun(series(0, 5000, slowForever), oneFault(), params(), true);
  ASSERT_EQ(run.steps.size(), 1u);
  EXPECT_FALSE(run.steps[0].recovered);
  EXPECT_FALSE(run.steps[0].time_to_recover_ms.has_value());
  EXPECT_LE(run.steps[0].score, 50.0);
}

TEST(AnalysisTest, FirstProgressIsTheFirstCompletionAfterTheFaultInsideTheWindow) {
  // Clean: the iteration starting at 2000 ends at 2010, 15 ms after the fault's 1995 ms start.
  RunAnalysis run = analyzeRun(series(0, 5000, clean), outageFault(), params(), true);
  ASSERT_EQ(run.steps.size(), 1u);
  EXPECT_NEAR(run.steps[0].time_to_first_progress_ms.value_or(-1), 15.0, kEps);
  // Nothing completes before the observation window closes: unknown, not the window's length.
  AnalysisParams p = params();
  p.observe_end_ms = 3000;
  run = analyzeRun(series(0, 5000, outage), outageFault(), p, true);
  ASSERT_EQ(run.steps.size(), 1u);
  EXPECT_FALSE(run.steps[0].time_to_first_progress_ms.has_value());
}

TEST(AnalysisTest, RecoveryRunMustEndInsideTheObservationWindow) {
  // Healthy again from 3015, but the window closes before 5 good iterations complete.
  AnalysisParams p = params();
  p.observe_end_ms = 3090;  // good iterations end 3025, 3045, 3065, 3085, then 3105 > 3090
  const RunAnalysis run = analyzeRun(series(0, 5000, outage), outageFault(), p, true);
  ASSERT_EQ(run.steps.size(), 1u);
  EXPECT_FALSE(run.steps[0].recovered);
  // Stall measured up to the end of the window: 1995 -> 3005 is still the longest gap.
  EXPECT_NEAR(run.steps[0].longest_stall_ms, 1010.0, kEps);
}

// ---------------------------------------------------------------------------------------------
// Survival.

struct SurvivalCase {
  const char* name;
  double until_ms;  // the rank stops starting iterations here
  bool survived_arg;
  bool survived;
  double score;
};

class SurvivalTest : public ::testing::TestWithParam<SurvivalCase> {};

TEST_P(SurvivalTest, DeadRankScoresZero) {
  const SurvivalCase& c = GetParam();
  const RunAnalysis run =
      analyzeRun(series(0, c.until_ms, clean), oneFault(), params(), c.survived_arg);
  ASSERT_EQ(run.steps.size(), 1u);
  EXPECT_EQ(run.steps[0].survived, c.survived);
  EXPECT_NEAR(run.steps[0].score, c.score, kEps);
  EXPECT_NEAR(run.score, c.score, kEps);
}

INSTANTIATE_TEST_SUITE_P(
    Analysis, SurvivalTest,
    ::testing::Values(SurvivalCase{"Healthy", 5000, true, true, 100},
                      SurvivalCase{"RankExitedWithError", 5000, false, false, 0},
                      // Last iteration 2480..2490: nothing ends after the revert at 3000.
                      SurvivalCase{"RankWentSilent", 2500, true, false, 0}),
    [](const auto& info) { return std::string(info.param.name); });

// ---------------------------------------------------------------------------------------------
// Several ranks.

TEST(AnalysisTest, MultiRankKeepsTheWorstRank) {
  // Rank 0 clean, rank 1 through the outage; samples interleaved and shuffled.
  std::vector<Sample> samples = concat(series(1, 5000, outage), series(0, 5000, clean));
  std::shuffle(samples.begin(), samples.end(), std::mt19937(7));

  const RunAnalysis both = analyzeRun(samples, outageFault(), params(), true);
  const RunAnalysis worst_only = analyzeRun(series(1, 5000, outage), outageFault(), params(), true);
  ASSERT_EQ(both.steps.size(), 1u);
  EXPECT_EQ(toJson(both.steps[0]), toJson(worst_only.steps[0]));
  EXPECT_NEAR(both.score, 50.615074503106, 1e-9);
  EXPECT_EQ(both.baseline_iterations, 100);
}

TEST(AnalysisTest, MultiRankTieKeepsLowestRank) {
  // Both clean (score 100); rank 1 moves twice the bytes, so its baseline is 2 GB/s.
  const std::vector<Sample> samples =
      concat(series(1, 5000, clean, 2 * kBytes), series(0, 5000, clean));
  const RunAnalysis run = analyzeRun(samples, oneFault(), params(), true);
  ASSERT_EQ(run.steps.size(), 1u);
  EXPECT_NEAR(run.steps[0].score, 100, kEps);
  EXPECT_NEAR(run.steps[0].baseline_busbw_gbps, 1.0, kEps);  // rank 0's
  EXPECT_NEAR(run.baseline_busbw_gbps, 1.5, kEps);           // pooled median of 1.0s and 2.0s
}

TEST(AnalysisTest, StepsMayComeFromDifferentRanks) {
  // Rank 0 suffers the first fault, rank 1 the second (half speed in each case).
  const auto slow0 = [](double s) { return s >= 2000 && s < 3000 ? 20.0 : 10.0; };
  const auto slow1 = [](double s) { return s >= 4000 && s < 5000 ? 20.0 : 10.0; };
  const std::vector<Sample> samples = concat(series(0, 7000, slow0), series(1, 7000, slow1));
  AnalysisParams p = params();
  p.observe_end_ms = 7000;
  const std::vector<FaultWindow> faults = {{1, 2000, 3000}, {2, 4000, 5000}};
  const RunAnalysis run = analyzeRun(samples, faults, p, true);
  ASSERT_EQ(run.steps.size(), 2u);
  EXPECT_NEAR(run.steps[0].worst_busbw_gbps, 0.5, kEps);
  EXPECT_NEAR(run.steps[1].worst_busbw_gbps, 0.5, kEps);
  EXPECT_LT(run.steps[0].retained, 0.7);
  EXPECT_LT(run.steps[1].retained, 0.7);
  EXPECT_NEAR(run.score, std::min(run.steps[0].score, run.steps[1].score), kEps);
}

// ---------------------------------------------------------------------------------------------
// Runs that cannot be scored, and runs without steps.

TEST(AnalysisTest, NoBaselineIsExplainedAndScoresZero) {
  AnalysisParams p = params();
  p.baseline_end_ms = 5;  // shorter than one 10 ms collective
  const RunAnalysis run = analyzeRun(series(0, 5000, clean), oneFault(), p, true);
  EXPECT_NE(run.note.find("no iteration inside the baseline window [0.0, 5.0] ms"),
            std::string::npos)
      << run.note;
  EXPECT_EQ(run.baseline_iterations, 0);
  EXPECT_EQ(run.score, 0);
  ASSERT_EQ(run.steps.size(), 1u);
  EXPECT_EQ(run.steps[0].step, 1);
  EXPECT_EQ(run.steps[0].fault_start_ms, 2000);
  EXPECT_EQ(run.steps[0].score, 0);
  EXPECT_FALSE(run.steps[0].recovered);
}

TEST(AnalysisTest, NoSamplesIsExplainedAndScoresZero) {
  const RunAnalysis run = analyzeRun({}, oneFault(), params(), true);
  EXPECT_NE(run.note.find("no iterations were recorded"), std::string::npos) << run.note;
  EXPECT_EQ(run.score, 0);
  ASSERT_EQ(run.steps.size(), 1u);
  EXPECT_EQ(run.steps[0].score, 0);
}

struct NoStepCase {
  const char* name;
  double baseline_end_ms;
  bool survived;
  double score;
};

class NoStepTest : public ::testing::TestWithParam<NoStepCase> {};

TEST_P(NoStepTest, RunScore) {
  const NoStepCase& c = GetParam();
  AnalysisParams p = params();
  p.baseline_end_ms = c.baseline_end_ms;
  const RunAnalysis run = analyzeRun(series(0, 5000, clean), {}, p, c.survived);
  EXPECT_TRUE(run.steps.empty());
  EXPECT_EQ(run.score, c.score);
}

INSTANTIATE_TEST_SUITE_P(Analysis, NoStepTest,
                         ::testing::Values(NoStepCase{"CleanRun", 1000, true, 100},
                                           NoStepCase{"RankFailed", 1000, false, 0},
                                           NoStepCase{"NoBaseline", 5, true, 0}),
                         [](const auto& info) { return std::string(info.param.name); });

// ---------------------------------------------------------------------------------------------
// Gates.

RunAnalysis gateFixture(bool with_bad_step) {
  RunAnalysis run;
  run.score = 42;
  StepMetrics good;
  good.step = 1;
  good.recovered = true;
  good.time_to_recover_ms = 120;
  good.retained = 0.8;
  run.steps.push_back(good);
  if (with_bad_step) {
    StepMetrics bad;
    bad.step = 2;
    bad.recovered = false;
    bad.retained = 0.3;
    bad.survived = false;
    run.steps.push_back(bad);
  }
  return run;
}

struct GateCase {
  const char* name;
  Gates gates;
  bool with_bad_step;
  std::vector<GateVerdict> expected;
  bool all_passed;
};

class GateTest : public ::testing::TestWithParam<GateCase> {};

TEST_P(GateTest, Verdicts) {
  const GateCase& c = GetParam();
  const std::vector<GateVerdict> verdicts = checkGates(c.gates, gateFixture(c.with_bad_step));
  ASSERT_EQ(verdicts.size(), c.expected.size());
  for (size_t i = 0; i < verdicts.size(); ++i) {
    EXPECT_EQ(verdicts[i].gate, c.expected[i].gate);
    EXPECT_EQ(verdicts[i].passed, c.expected[i].passed) << verdicts[i].gate;
    EXPECT_EQ(verdicts[i].detail, c.expected[i].detail);
  }
  EXPECT_EQ(allPassed(verdicts), c.all_passed);
}

INSTANTIATE_TEST_SUITE_P(
    Analysis, GateTest,
    ::testing::Values(
        GateCase{"NoGates", gates(std::nullopt, std::nullopt, std::nullopt, false), true, {}, true},
        GateCase{"ScoreTooLow",
                 gates(60, std::nullopt, std::nullopt, false),
                 false,
                 {{"min_score", false, "score 42.0 < 60.0"}},
                 false},
        GateCase{"ScoreHighEnough",
                 gates(40, std::nullopt, std::nullopt, false),
                 false,
                 {{"min_score", true, "score 42.0 >= 40.0"}},
                 true},
        GateCase{
            "RecoveredInTime",
            gates(std::nullopt, 1000, std::nullopt, false),
            false,
            {{"max_recovery_ms", true, "every step recovered within 1000.0 ms (slowest 120.0 ms)"}},
            true},
        GateCase{"RecoveredTooSlowly",
                 gates(std::nullopt, 100, std::nullopt, false),
                 false,
                 {{"max_recovery_ms", false, "step 1 recovered in 120.0 ms > 100.0 ms"}},
                 false},
        GateCase{"NeverRecovered",
                 gates(std::nullopt, 1000, std::nullopt, false),
                 true,
                 {{"max_recovery_ms", false, "step 2 did not recover within the recovery window"}},
                 false},
        GateCase{"EveryRecoveryFailureListed",
                 gates(std::nullopt, 100, std::nullopt, false),
                 true,
                 {{"max_recovery_ms", false,
                   "step 1 recovered in 120.0 ms > 100.0 ms; step 2 did not recover within the "
                   "recovery window"}},
                 false},
        GateCase{"RetainedEnough",
                 gates(std::nullopt, std::nullopt, 0.5, false),
                 false,
                 {{"min_retained", true, "every step retained >= 0.50 (lowest 0.80)"}},
                 true},
        GateCase{"RetainedTooLittle",
                 gates(std::nullopt, std::nullopt, 0.5, false),
                 true,
                 {{"min_retained", false, "step 2 retained 0.30 < 0.50"}},
                 false},
        GateCase{"Survived",
                 gates(std::nullopt, std::nullopt, std::nullopt, true),
                 false,
                 {{"require_survival", true, "every rank survived every step"}},
                 true},
        GateCase{"DidNotSurvive",
                 gates(std::nullopt, std::nullopt, std::nullopt, true),
                 true,
                 {{"require_survival", false, "step 2: a rank did not survive the fault"}},
                 false},
        GateCase{"OneFailingGateFailsTheRun",
                 gates(40, 1000, 0.5, true),
                 true,
                 {{"min_score", true, "score 42.0 >= 40.0"},
                  {"max_recovery_ms", false, "step 2 did not recover within the recovery window"},
                  {"min_retained", false, "step 2 retained 0.30 < 0.50"},
                  {"require_survival", false, "step 2: a rank did not survive the fault"}},
                 false}),
    [](const auto& info) { return std::string(info.param.name); });

// A hot spot slows the ring without stopping it: the tail of the iteration times is what a user
// gates on. Baseline iterations take 10 ms; during [2000, 3000) every fifth takes 40 ms.
double tailDuringFault(double start) {
  if (start < 2000 || start >= 3000) return 10;
  return static_cast<int64_t>(start) % 100 == 0 ? 40 : 20;
}

TEST(AnalysisTest, IterationTimePercentilesDuringTheFaultAgainstTheBaseline) {
  const RunAnalysis run = analyzeRun(series(0, 5000, tailDuringFault), oneFault(), params(), true);
  ASSERT_EQ(run.steps.size(), 1u);
  const StepMetrics& m = run.steps[0];
  EXPECT_EQ(m.baseline_iteration.iterations, 50);  // [0, 1000) every 20 ms
  EXPECT_DOUBLE_EQ(m.baseline_iteration.p50_ms, 10);
  EXPECT_DOUBLE_EQ(m.baseline_iteration.p99_ms, 10);
  ASSERT_GT(m.fault_iteration.iterations, 20);
  EXPECT_DOUBLE_EQ(m.fault_iteration.p50_ms, 20);
  EXPECT_DOUBLE_EQ(m.fault_iteration.p99_ms, 40);
  EXPECT_DOUBLE_EQ(m.fault_iteration.p999_ms, 40);
  ASSERT_TRUE(m.p99_slowdown.has_value());
  EXPECT_DOUBLE_EQ(*m.p99_slowdown, 4.0);

  Gates loose;
  loose.require_survival = false;
  loose.max_p99_slowdown = 4.5;
  auto verdicts = checkGates(loose, run);
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_TRUE(verdicts[0].passed);
  EXPECT_EQ(verdicts[0].detail,
            "every step's p99 iteration time <= 4.50 x baseline (largest 4.00)");
  Gates tight = loose;
  tight.max_p99_slowdown = 3;
  verdicts = checkGates(tight, run);
  EXPECT_FALSE(verdicts[0].passed);
  EXPECT_EQ(verdicts[0].detail, "step 1 p99 iteration time 40.0 ms = 4.00 x baseline > 3.00");
}

TEST(AnalysisTest, ScoreGateOnUnscoredRunQuotesTheNote) {
  RunAnalysis run;
  run.note = "rank 0 has no iteration inside the baseline window [0.0, 5.0] ms";
  const auto verdicts = checkGates(gates(60, std::nullopt, std::nullopt, false), run);
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_EQ(verdicts[0].detail,
            "score 0.0 < 60.0 (rank 0 has no iteration inside the baseline window [0.0, 5.0] ms)");
}

// ---------------------------------------------------------------------------------------------
// JSON.

TEST(AnalysisTest, StepJsonUsesFieldNamesAndNulls) {
  StepMetrics m;
  m.step = 3;
  m.fault_start_ms = 10;
  m.fault_end_ms = 20;
  m.baseline_busbw_gbps = 1.5;
  m.worst_busbw_gbps = 0.25;
  m.retained = 0.5;
  m.time_to_recover_ms = 7;
  m.longest_stall_ms = 9;
  m.recovered = true;
  m.score = 61.5;
  const nlohmann::json expected = {
      {"step", 3},
      {"fault_start_ms", 10.0},
      {"fault_end_ms", 20.0},
      {"baseline_busbw_gbps", 1.5},
      {"worst_busbw_gbps", 0.25},
      {"retained", 0.5},
      {"time_to_detect_ms", nullptr},
      {"time_to_recover_ms", 7.0},
      {"longest_stall_ms", 9.0},
      {"time_to_first_progress_ms", nullptr},
      {"baseline_iteration_ms", {{"iterations", 0}, {"p50", 0.0}, {"p99", 0.0}, {"p999", 0.0}}},
      {"fault_iteration_ms", {{"iterations", 0}, {"p50", 0.0}, {"p99", 0.0}, {"p999", 0.0}}},
      {"p99_slowdown", nullptr},
      {"hottest_queue", nullptr},
      {"paused_queues", nlohmann::json::array()},
      {"aggressors", nullptr},
      {"subnet", nullptr},
      {"survived", true},
      {"recovered", true},
      {"score", 61.5},
  };
  EXPECT_EQ(toJson(m), expected);
}

// An external workload that reports step times only: the run is measured in steps per second,
// and the ratios (retained, the score) come out as they would in busbw.
TEST(AnalysisTest, SamplesWithoutBytesAreMeasuredInStepsPerSecond) {
  std::vector<core::Sample> with_bytes = series(0, 5000, outage);
  std::vector<core::Sample> without = with_bytes;
  for (core::Sample& s : without) s.bytes = 0;
  const RunAnalysis busbw = analyzeRun(with_bytes, outageFault(), params(), true);
  const RunAnalysis steps = analyzeRun(without, outageFault(), params(), true);
  EXPECT_EQ(busbw.rate_unit, RateUnit::kBusBandwidthGBps);
  EXPECT_EQ(steps.rate_unit, RateUnit::kStepsPerSecond);
  EXPECT_EQ(toJson(steps).at("rate_unit"), "steps_per_s");
  EXPECT_TRUE(steps.note.empty()) << steps.note;
  // Equal sizes everywhere: the rate is busbw's divided by a constant, so the ratios agree.
  EXPECT_DOUBLE_EQ(steps.baseline_busbw_gbps, 1000.0 / without.front().duration_ms);
  ASSERT_EQ(steps.steps.size(), 1u);
  EXPECT_NEAR(steps.steps[0].retained, busbw.steps[0].retained, 1e-9);
  EXPECT_NEAR(steps.score, busbw.score, 1e-9);
  EXPECT_EQ(steps.steps[0].time_to_recover_ms, busbw.steps[0].time_to_recover_ms);
  EXPECT_DOUBLE_EQ(iterationRate(0, 250, 4), 4.0);
  EXPECT_DOUBLE_EQ(iterationRate(0, 0, 4), 0.0);
  EXPECT_DOUBLE_EQ(iterationRate(1'000'000, 1, 4), busBandwidthGBps(1'000'000, 1, 4));
}

TEST(AnalysisTest, RunAndVerdictJson) {
  const RunAnalysis run = analyzeRun(series(0, 5000, outage), outageFault(), params(), true);
  const nlohmann::json j = toJson(run);
  EXPECT_EQ(j.at("baseline_iterations"), 50);
  EXPECT_EQ(j.at("note"), "");
  ASSERT_EQ(j.at("steps").size(), 1u);
  EXPECT_EQ(j.at("steps")[0].at("time_to_recover_ms"), 15.0);
  EXPECT_EQ(j.at("score"), run.score);
  EXPECT_EQ(j.at("rate_unit"), "busbw_gbps");
  EXPECT_EQ(j.size(), 6u);

  const nlohmann::json v =
      toJson(std::vector<GateVerdict>{{"min_score", false, "score 1.0 < 2.0"}});
  EXPECT_EQ(v, nlohmann::json::parse(
                   R"([{"gate":"min_score","passed":false,"detail":"score 1.0 < 2.0"}])"));
}

}  // namespace
}  // namespace fabric_chaos::scenarios
