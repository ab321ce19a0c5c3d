// Retention (store/retention.h) on a real database file: which runs a policy prunes (by age, by
// count, never an unfinished one, each once), what stays of a pruned run (its envelope with the
// stall, thinned telemetry series with their first and last points, its result, score and
// events, a "retention" attribute), that nothing of the other runs changes, and the age parser.
// The file's row counts are read on a second connection.

#include "store/retention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/store/store_test_support.h"

namespace fabric_chaos::store {
namespace {

using core::Sample;
using core::StatusCode;
using core::TelemetryPoint;
using test_support::openOrDie;
using test_support::RawDb;
using test_support::TempDir;

constexpr int64_t kDayMs = 86'400'000;
constexpr int64_t kNow = 100 * kDayMs;

class RetentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("fc.db");
    store_ = openOrDie(path_);
    ASSERT_NE(store_, nullptr);
  }

  // A run of 2 ranks x 3000 iterations (rank 1's iteration 1500 a 700 ms stall) and 2 telemetry
  // series of 5000 points, finished `days_ago` before kNow (or still running when negative).
  int64_t seedRun(int days_ago) {
    auto id = store_->createRun("link-flap", json{{"name", "link-flap"}}, "netns");
    EXPECT_TRUE(id.isOk());
    std::vector<Sample> samples;
    for (int i = 0; i < 3000; ++i) {
      for (int rank = 0; rank < 2; ++rank) {
        samples.push_back({rank, i, i * 3.0, rank == 1 && i == 1500 ? 700.0 : 3.0, 1 << 20});
      }
    }
    EXPECT_TRUE(store_->appendSamples(*id, samples).isOk());
    std::vector<TelemetryPoint> points;
    for (int i = 0; i < 5000; ++i) {
      points.push_back({i * 2.0, "sw0/p1/lossless", "tx_bytes", int64_t{i} * 1500});
      points.push_back({i * 2.0, "sw0/p1/lossless", "drops", i / 100});
    }
    EXPECT_TRUE(store_->appendTelemetry(*id, points).isOk());
    EXPECT_TRUE(store_->appendEvent({*id, 10, 1, "fault_applied", json::object()}).isOk());
    if (days_ago < 0) {
      EXPECT_TRUE(store_->setRunState(*id, "injecting").isOk());
      return *id;
    }
    EXPECT_TRUE(
        store_->finishRun(*id, "passed", 91.5, json{{"analysis", {{"score", 91.5}}}}, "").isOk());
    RawDb raw(path_);
    raw.exec("UPDATE runs SET finished_ms = " + std::to_string(kNow - days_ago * kDayMs) +
             " WHERE id = " + std::to_string(*id));
    return *id;
  }

  int64_t rows(const std::string& table, int64_t run) {
    RawDb raw(path_);
    return std::stoll(
        raw.scalar("SELECT COUNT(*) FROM " + table + " WHERE run_id = " + std::to_string(run)));
  }

  TempDir dir_;
  std::string path_;
  std::unique_ptr<Store> store_;
};

std::vector<int64_t> prunedIds(const RetentionPassReport& report) {
  std::vector<int64_t> out;
  for (const PruneReport& pruned : report.pruned) out.push_back(pruned.run_id);
  return out;
}

TEST_F(RetentionTest, AnOldRunKeepsItsEnvelopeResultAndEventsAndTheRestGoes) {
  const int64_t old_run = seedRun(40);
  const int64_t recent = seedRun(2);
  const int64_t running = seedRun(-1);
  RetentionPolicy policy;
  policy.max_age_ms = 30 * kDayMs;
  policy.sample_buckets = 100;
  policy.telemetry_points = 50;

  auto pass = runRetentionPass(*store_, policy, kNow);
  ASSERT_TRUE(pass.isOk()) << pass.status().toString();
  ASSERT_EQ(prunedIds(*pass), (std::vector<int64_t>{old_run}));
  const PruneReport& report = pass->pruned[0];
  EXPECT_EQ(report.samples_before, 6000);
  EXPECT_EQ(report.telemetry_before, 10000);
  EXPECT_LE(report.samples_kept, 2 * 2 * 100);
  EXPECT_GE(report.samples_kept, 2 * 100);
  EXPECT_EQ(rows("samples", old_run), report.samples_kept);
  EXPECT_EQ(rows("telemetry", old_run), report.telemetry_kept);
  EXPECT_LE(report.telemetry_kept, 2 * 51);
  EXPECT_GE(report.telemetry_kept, 2 * 40);

  // The stall is still there, and each series' first and last points.
  auto kept = store_->samples(old_run);
  ASSERT_TRUE(kept.isOk());
  EXPECT_TRUE(std::any_of(kept->begin(), kept->end(), [](const Sample& s) {
    return s.rank == 1 && s.iteration == 1500 && s.duration_ms == 700.0;
  }));
  auto series = store_->telemetry(old_run);
  ASSERT_TRUE(series.isOk());
  const auto has_point = [&](const std::string& metric, double t_ms) {
    return std::any_of(series->begin(), series->end(), [&](const TelemetryPoint& p) {
      return p.metric == metric && p.t_ms == t_ms;
    });
  };
  EXPECT_TRUE(has_point("tx_bytes", 0));
  EXPECT_TRUE(has_point("tx_bytes", 9998));
  EXPECT_TRUE(has_point("drops", 9998));

  // What stays of the run: its result, score and events, and a note of the pruning.
  auto run = store_->getRun(old_run);
  ASSERT_TRUE(run.isOk());
  EXPECT_EQ(run->score, 91.5);
  EXPECT_EQ(run->result["analysis"]["score"], 91.5);
  EXPECT_EQ(store_->events(old_run)->size(), 1u);
  EXPECT_EQ(run->attributes["retention"]["samples_before"], 6000);
  EXPECT_EQ(run->attributes["retention"]["samples_kept"], report.samples_kept);

  // The others are whole; a second pass prunes nothing.
  for (int64_t untouched : {recent, running}) {
    EXPECT_EQ(rows("samples", untouched), 6000);
    EXPECT_EQ(rows("telemetry", untouched), 10000);
  }
  auto again = runRetentionPass(*store_, policy, kNow);
  ASSERT_TRUE(again.isOk());
  EXPECT_TRUE(again->pruned.empty());
}

// By count: every finished run but the newest N, oldest first; a run still going is not counted.
TEST_F(RetentionTest, KeepingTheNewestRunsPrunesTheOlderFinishedOnes) {
  const int64_t a = seedRun(9);
  const int64_t b = seedRun(1);
  const int64_t c = seedRun(5);
  const int64_t running = seedRun(-1);
  RetentionPolicy policy;
  policy.keep_runs = 1;
  auto pass = runRetentionPass(*store_, policy, kNow);
  ASSERT_TRUE(pass.isOk()) << pass.status().toString();
  EXPECT_EQ(prunedIds(*pass), (std::vector<int64_t>{a, c}));
  EXPECT_EQ(rows("samples", b), 6000);
  EXPECT_EQ(rows("samples", running), 6000);
  // Both limits: a run goes when either says so.
  const int64_t d = seedRun(0);
  policy.max_age_ms = kDayMs / 2;
  pass = runRetentionPass(*store_, policy, kNow);
  ASSERT_TRUE(pass.isOk());
  EXPECT_EQ(prunedIds(*pass), (std::vector<int64_t>{b}));
  EXPECT_EQ(rows("samples", d), 6000);
  // Without a policy nothing happens.
  EXPECT_TRUE(runRetentionPass(*store_, RetentionPolicy{}, kNow)->pruned.empty());
}

// A database this version creates gives the freed pages back: the file's free list is empty
// after the pass (auto_vacuum=INCREMENTAL).
TEST_F(RetentionTest, TheFreedPagesAreGivenBack) {
  seedRun(40);
  RawDb raw(path_);
  EXPECT_EQ(raw.scalar("PRAGMA auto_vacuum"), "2");  // incremental
  const int64_t pages_before = std::stoll(raw.scalar("PRAGMA page_count"));
  RetentionPolicy policy;
  policy.max_age_ms = kDayMs;
  auto pass = runRetentionPass(*store_, policy, kNow);
  ASSERT_TRUE(pass.isOk()) << pass.status().toString();
  ASSERT_EQ(pass->pruned.size(), 1u);
  EXPECT_GT(pass->pages_released, 0);
  EXPECT_EQ(raw.scalar("PRAGMA freelist_count"), "0");
  EXPECT_LT(std::stoll(raw.scalar("PRAGMA page_count")), pages_before);
}

TEST(RetentionAge, WholeNumbersWithAUnit) {
  EXPECT_EQ(*parseRetentionAge("30d"), 30 * kDayMs);
  EXPECT_EQ(*parseRetentionAge("12h"), 12 * 3'600'000);
  EXPECT_EQ(*parseRetentionAge("90m"), 90 * 60'000);
  EXPECT_EQ(*parseRetentionAge("3600s"), 3'600'000);
  for (const char* bad : {"", "d", "0d", "-3d", "3", "3w", "1.5d", "d3", "999999999999d"}) {
    auto parsed = parseRetentionAge(bad);
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(parseRetentionAge("3w").status().message(),
            "retention age \"3w\": a whole positive number with a unit, d, h, m or s (30d, 12h, "
            "90m)");
}

}  // namespace
}  // namespace fabric_chaos::store
