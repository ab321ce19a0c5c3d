// Reads go through their own connections: while the store's writer is stuck in a write (another
// connection, as a second process would, holds the file's write lock), getRun, the cursor reads
// and the token lookup every API request makes still answer, with the last committed state; and
// the stuck write completes once the lock goes. Before the read pool, each of these reads queued
// behind the writer's mutex until its busy timeout.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "store/store.h"
#include "tests/store/store_test_support.h"

namespace fabric_chaos::store {
namespace {

using test_support::openOrDie;
using test_support::RawDb;
using test_support::TempDir;

TEST(StoreReadPool, ReadsAnswerWhileTheWriterWaitsForTheFile) {
  TempDir dir;
  const std::string path = dir.file("fc.db");
  auto store = openOrDie(path);
  ASSERT_NE(store, nullptr);
  auto run = store->createRun("link-flap", json{{"name", "link-flap"}}, "netns-lab");
  ASSERT_TRUE(run.isOk());
  ASSERT_TRUE(store->appendSamples(*run, {{0, 0, 0.0, 3.0, 1024}, {1, 0, 0.0, 3.1, 1024}}).isOk());

  RawDb other(path);
  other.exec("BEGIN IMMEDIATE");  // the file's write lock, held until the ROLLBACK below
  other.exec("INSERT INTO samples (run_id, rank, iteration, start_ms, duration_ms, bytes) "
             "VALUES (" + std::to_string(*run) + ", 7, 0, 0, 1, 1)");
  std::atomic<bool> write_done{false};
  core::Status write_status;
  std::thread writer([&] {
    write_status = store->appendSamples(*run, {{0, 1, 3.0, 3.0, 1024}});
    write_done = true;
  });
  // Give the writer time to take the store's mutex and start waiting on the file. Were it
  // slower, the reads below would still pass: this orders, it does not time.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));

  auto got = store->getRun(*run);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  auto rows = store->sampleRows(*run, SampleQuery{});
  ASSERT_TRUE(rows.isOk()) << rows.status().toString();
  EXPECT_EQ(rows->size(), 2u) << "the committed samples, not the other connection's insert";
  EXPECT_EQ(store->sampleRankCount(*run).value(), 2);
  EXPECT_EQ(store->tokenByHash("no-such-hash").status().code(), core::StatusCode::kNotFound);
  EXPECT_FALSE(write_done) << "the reads waited for the writer";

  other.exec("ROLLBACK");
  writer.join();
  EXPECT_TRUE(write_status.isOk()) << write_status.toString();
  EXPECT_EQ(store->sampleRows(*run, SampleQuery{})->size(), 3u);
}

// More concurrent readers than connections: they queue for one, and all get their answer.
TEST(StoreReadPool, MoreReadersThanConnectionsAllGetTheirAnswer) {
  TempDir dir;
  auto store = openOrDie(dir.file("fc.db"));
  ASSERT_NE(store, nullptr);
  auto run = store->createRun("link-flap", json{{"name", "link-flap"}}, "netns-lab");
  ASSERT_TRUE(run.isOk());
  std::vector<core::Sample> samples;
  for (int i = 0; i < 2000; ++i) samples.push_back({i % 4, i / 4, i * 1.0, 3.0, 1024});
  ASSERT_TRUE(store->appendSamples(*run, samples).isOk());
  std::atomic<int> right{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 16; ++t) {
    readers.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        auto rows = store->sampleRows(*run, SampleQuery{});
        if (rows.isOk() && rows->size() == 2000u) ++right;
      }
    });
  }
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(right, 16 * 20);
}

}  // namespace
}  // namespace fabric_chaos::store
