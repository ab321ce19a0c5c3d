// The store's incremental and bounded reads (issue 15): samples and events by cursor (seq, in the
// order they were stored) with limits and filters, the index that makes a page cost what it
// returns (EXPLAIN QUERY PLAN, on a second connection), the per-bucket envelope that keeps a
// stall's slowest iteration, and the rank count.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "store/store.h"
#include "tests/store/store_test_support.h"

namespace fabric_chaos::store {
namespace {

using core::Sample;
using core::StatusCode;
using test_support::openOrDie;
using test_support::RawDb;
using test_support::TempDir;

class StoreCursorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("fc.db");
    store_ = openOrDie(path_);
    ASSERT_NE(store_, nullptr);
  }

  int64_t newRun() {
    auto id = store_->createRun("link-flap", json{{"name", "link-flap"}}, "netns");
    EXPECT_TRUE(id.isOk()) << id.status().toString();
    return id.isOk() ? *id : 0;
  }

  // Every row sampleRows gives for `query`, page after page of `query.limit`.
  std::vector<SampleRow> allPages(int64_t run, SampleQuery query, int* pages) {
    std::vector<SampleRow> out;
    *pages = 0;
    for (;;) {
      auto page = store_->sampleRows(run, query);
      EXPECT_TRUE(page.isOk()) << page.status().toString();
      if (!page.isOk() || page->empty()) return out;
      ++*pages;
      EXPECT_LE(page->size(), static_cast<size_t>(query.limit));
      query.after_seq = page->back().seq;
      out.insert(out.end(), page->begin(), page->end());
    }
  }

  TempDir dir_;
  std::string path_;
  std::unique_ptr<Store> store_;
};

std::vector<int64_t> iterations(const std::vector<SampleRow>& rows) {
  std::vector<int64_t> out;
  for (const SampleRow& row : rows) out.push_back(row.sample.iteration);
  return out;
}

TEST_F(StoreCursorTest, SampleRowsPageThroughARunInTheOrderTheyWereStored) {
  const int64_t run = newRun();
  const int64_t other = newRun();
  // Two batches of run interleaved with another run's, rank 1's before rank 0's in the second.
  ASSERT_TRUE(store_->appendSamples(run, {{0, 0, 0, 5, 64}, {1, 0, 0, 6, 64}}).isOk());
  ASSERT_TRUE(store_->appendSamples(other, {{0, 0, 0, 1, 8}}).isOk());
  ASSERT_TRUE(
      store_->appendSamples(run, {{1, 1, 7, 4, 64}, {0, 1, 6, 3, 64}, {0, 2, 12, 2, 64}}).isOk());

  SampleQuery query;
  query.limit = 2;
  int pages = 0;
  const std::vector<SampleRow> rows = allPages(run, query, &pages);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(iterations(rows), (std::vector<int64_t>{0, 0, 1, 1, 2}));
  EXPECT_EQ(rows[2].sample.rank, 1);  // stored order, not rank order
  EXPECT_DOUBLE_EQ(rows[4].sample.duration_ms, 2);
  EXPECT_EQ(rows[4].sample.bytes, 64);
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_GT(rows[i].seq, rows[i - 1].seq);

  // Past the last one: nothing, until more is stored.
  query.after_seq = rows.back().seq;
  EXPECT_TRUE(store_->sampleRows(run, query)->empty());
  ASSERT_TRUE(store_->appendSamples(run, {{1, 2, 13, 9, 64}}).isOk());
  auto more = store_->sampleRows(run, query);
  ASSERT_TRUE(more.isOk());
  ASSERT_EQ(more->size(), 1u);
  EXPECT_EQ((*more)[0].sample.iteration, 2);
  EXPECT_EQ((*more)[0].sample.rank, 1);

  // Filters: one rank; start_ms after a time; both; no limit.
  SampleQuery rank0;
  rank0.rank = 0;
  EXPECT_EQ(iterations(*store_->sampleRows(run, rank0)), (std::vector<int64_t>{0, 1, 2}));
  SampleQuery late;
  late.after_ms = 6.5;
  EXPECT_EQ(iterations(*store_->sampleRows(run, late)), (std::vector<int64_t>{1, 2, 2}));
  late.rank = 1;
  EXPECT_EQ(iterations(*store_->sampleRows(run, late)), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(store_->sampleRows(run, SampleQuery{})->size(), 6u);
  EXPECT_TRUE(store_->sampleRows(4242, SampleQuery{})->empty());
}

// A page is a seek and a range on samples_by_run_seq, not a scan of the table or of the run.
TEST_F(StoreCursorTest, TheCursorReadsUseTheirIndex) {
  RawDb raw(path_);
  const std::string samples = raw.queryPlan(
      "SELECT rowid, rank FROM samples WHERE run_id = 1 AND rowid > 10 AND (NULL IS NULL OR "
      "rank = NULL) AND (NULL IS NULL OR start_ms > NULL) ORDER BY rowid LIMIT 100");
  EXPECT_NE(samples.find("INDEX samples_by_run_seq (run_id=? AND rowid>?)"), std::string::npos)
      << samples;
  EXPECT_EQ(samples.find("TEMP B-TREE"), std::string::npos) << samples;
  const std::string events = raw.queryPlan(
      "SELECT rowid, kind, detail FROM events WHERE run_id = 1 AND rowid > 3 ORDER BY rowid LIMIT "
      "10");
  EXPECT_NE(events.find("INDEX events_by_run_seq (run_id=? AND rowid>?)"), std::string::npos)
      << events;
  EXPECT_NE(raw.queryPlan("SELECT MAX(rank) FROM samples WHERE run_id = 1").find("SEARCH"),
            std::string::npos);
}

// GET /v1/runs?fabric=: the newest runs of that fabric, `limit` counting only them, through
// runs_by_fabric rather than a scan of every run.
TEST_F(StoreCursorTest, RunsOfOneFabricComeNewestFirstThroughTheirIndex) {
  std::vector<int64_t> lab_runs;
  for (int i = 0; i < 30; ++i) {
    const std::string fabric = i % 10 == 3 ? "vm-lab" : "netns";
    auto id = store_->createRun(i % 2 ? "link-flap" : "loss", json{{"name", "x"}}, fabric);
    ASSERT_TRUE(id.isOk());
    if (fabric == "vm-lab") lab_runs.push_back(*id);
  }
  RunFilter filter;
  filter.fabric = "vm-lab";
  filter.limit = 2;
  auto runs = store_->listRuns(filter);
  ASSERT_TRUE(runs.isOk()) << runs.status().toString();
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].id, lab_runs[2]);
  EXPECT_EQ((*runs)[1].id, lab_runs[1]);
  filter.limit = 100;
  filter.scenario = "link-flap";  // runs 3, 13, 23 (0-based i): all odd, all link-flap
  EXPECT_EQ(store_->listRuns(filter)->size(), 3u);
  filter.scenario = "loss";
  EXPECT_TRUE(store_->listRuns(filter)->empty());
  filter.scenario.clear();
  filter.fabric = "no-such-fabric";
  EXPECT_TRUE(store_->listRuns(filter)->empty());

  RawDb raw(path_);
  const std::string plan = raw.queryPlan(
      "SELECT id FROM runs WHERE fabric = 'vm-lab' AND (NULL IS NULL OR scenario_name = NULL) "
      "AND (NULL IS NULL OR state = NULL) ORDER BY id DESC LIMIT 2");
  EXPECT_NE(plan.find("INDEX runs_by_fabric (fabric=?)"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("TEMP B-TREE"), std::string::npos) << plan;
}

// 2 ranks x 1000 iterations of 1 ms, except rank 1's stall (iteration 500: 480 ms) and one fast
// iteration (rank 0's 250: 0.25 ms). 10 buckets keep at most 20 samples per rank, and both.
TEST_F(StoreCursorTest, TheEnvelopeKeepsEachBucketsFastestAndSlowestSoAStallSurvives) {
  const int64_t run = newRun();
  std::vector<Sample> batch;
  for (int i = 0; i < 1000; ++i) {
    for (int rank = 0; rank < 2; ++rank) {
      double duration = 1.0 + 0.001 * ((i * 7 + rank) % 13);
      if (rank == 1 && i == 500) duration = 480;
      if (rank == 0 && i == 250) duration = 0.25;
      batch.push_back({rank, i, i * 2.0, duration, 4096});
    }
  }
  ASSERT_TRUE(store_->appendSamples(run, batch).isOk());

  auto envelope = store_->sampleEnvelope(run, SampleQuery{}, 10);
  ASSERT_TRUE(envelope.isOk()) << envelope.status().toString();
  size_t per_rank[2] = {0, 0};
  for (const SampleRow& row : *envelope) ++per_rank[row.sample.rank];
  EXPECT_LE(per_rank[0], 20u);
  EXPECT_LE(per_rank[1], 20u);
  EXPECT_GE(per_rank[0], 10u);  // at least one per bucket
  auto has = [&](int rank, int64_t iteration) {
    return std::any_of(envelope->begin(), envelope->end(), [&](const SampleRow& row) {
      return row.sample.rank == rank && row.sample.iteration == iteration;
    });
  };
  EXPECT_TRUE(has(1, 500)) << "the stall";
  EXPECT_TRUE(has(0, 250)) << "the fastest iteration";
  const auto stall = std::find_if(envelope->begin(), envelope->end(), [](const SampleRow& row) {
    return row.sample.rank == 1 && row.sample.iteration == 500;
  });
  EXPECT_DOUBLE_EQ(stall->sample.duration_ms, 480);
  EXPECT_DOUBLE_EQ(stall->sample.start_ms, 1000);
  EXPECT_EQ(stall->sample.bytes, 4096);
  // By rank, then time; no sample twice.
  EXPECT_TRUE(std::is_sorted(envelope->begin(), envelope->end(),
                             [](const SampleRow& a, const SampleRow& b) {
                               return std::make_pair(a.sample.rank, a.sample.start_ms) <
                                      std::make_pair(b.sample.rank, b.sample.start_ms);
                             }));
  std::vector<int64_t> seqs;
  for (const SampleRow& row : *envelope) seqs.push_back(row.seq);
  std::sort(seqs.begin(), seqs.end());
  EXPECT_EQ(std::adjacent_find(seqs.begin(), seqs.end()), seqs.end());

  // One rank, and only after a time: the stall is still there, nothing before 900 ms is.
  SampleQuery late;
  late.rank = 1;
  late.after_ms = 900;
  auto rank1 = store_->sampleEnvelope(run, late, 5);
  ASSERT_TRUE(rank1.isOk());
  EXPECT_LE(rank1->size(), 10u);
  for (const SampleRow& row : *rank1) {
    EXPECT_EQ(row.sample.rank, 1);
    EXPECT_GT(row.sample.start_ms, 900);
  }
  EXPECT_TRUE(std::any_of(rank1->begin(), rank1->end(),
                          [](const SampleRow& row) { return row.sample.iteration == 500; }));

  // Fewer samples than buckets: all of them; one sample: itself; none: nothing.
  const int64_t small = newRun();
  ASSERT_TRUE(store_->appendSamples(small, {{0, 0, 0, 3, 8}, {0, 1, 4, 5, 8}}).isOk());
  EXPECT_EQ(store_->sampleEnvelope(small, SampleQuery{}, 100)->size(), 2u);
  const int64_t single = newRun();
  ASSERT_TRUE(store_->appendSamples(single, {{0, 0, 7, 3, 8}}).isOk());
  EXPECT_EQ(store_->sampleEnvelope(single, SampleQuery{}, 4)->size(), 1u);
  EXPECT_TRUE(store_->sampleEnvelope(newRun(), SampleQuery{}, 4)->empty());
  EXPECT_EQ(store_->sampleEnvelope(run, SampleQuery{}, 0).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(StoreCursorTest, TheRankCountIsTheHighestRankPlusOne) {
  const int64_t run = newRun();
  EXPECT_EQ(*store_->sampleRankCount(run), 0);
  ASSERT_TRUE(store_->appendSamples(run, {{3, 0, 0, 1, 8}, {1, 0, 0, 1, 8}}).isOk());
  EXPECT_EQ(*store_->sampleRankCount(run), 4);  // rank 0 and 2 have not reported yet
  EXPECT_EQ(*store_->sampleRankCount(4242), 0);
}

// Events by the order they were stored, which a late event's t_ms does not change: a reader
// with a cursor gets each one once.
TEST_F(StoreCursorTest, EventRowsFollowTheOrderTheyWereStored) {
  const int64_t run = newRun();
  const int64_t other = newRun();
  ASSERT_TRUE(store_->appendEvent({run, 300, 1003, "fault_reverted", {{"id", 1}}}).isOk());
  ASSERT_TRUE(store_->appendEvent({other, 150, 1002, "rank_started", json::object()}).isOk());
  ASSERT_TRUE(store_->appendEvent({run, 100, 1001, "rank_started", {{"rank", 0}}}).isOk());
  ASSERT_TRUE(store_->appendEvent({run, 200, 1002, "fault_applied", {{"id", 1}}}).isOk());

  auto first = store_->eventRows(run, 0, 2);
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  ASSERT_EQ(first->size(), 2u);
  EXPECT_EQ((*first)[0].event.kind, "fault_reverted");
  EXPECT_EQ((*first)[1].event.kind, "rank_started");
  EXPECT_EQ((*first)[1].event.detail, (json{{"rank", 0}}));
  EXPECT_EQ((*first)[1].event.run_id, run);
  auto rest = store_->eventRows(run, (*first)[1].seq, 0);
  ASSERT_TRUE(rest.isOk());
  ASSERT_EQ(rest->size(), 1u);
  EXPECT_EQ((*rest)[0].event.kind, "fault_applied");
  EXPECT_DOUBLE_EQ((*rest)[0].event.t_ms, 200);
  EXPECT_TRUE(store_->eventRows(run, (*rest)[0].seq, 0)->empty());
}

}  // namespace
}  // namespace fabric_chaos::store
