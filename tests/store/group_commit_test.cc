// GroupCommit: alone, a batch is its own commit; eight writers at once share commits, each gets
// its own batch's status (one failing batch fails only its caller), and every batch is in exactly
// one commit, returned only after that commit ran.

#include "store/group_commit.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "store/store.h"
#include "tests/store/store_test_support.h"

namespace fabric_chaos::store {
namespace {

using core::Status;
using core::StatusCode;

TEST(GroupCommit, ABatchAloneIsItsOwnCommit) {
  GroupCommit<int> group;
  std::vector<size_t> sizes;
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(group
                    .submit(i,
                            [&](GroupCommit<int>::Group& batches) {
                              sizes.push_back(batches.size());
                              for (auto* pending : batches) pending->status = Status::ok();
                            })
                    .isOk());
  }
  EXPECT_EQ(sizes, (std::vector<size_t>{1, 1, 1}));
  EXPECT_EQ(group.commits(), 3);
}

TEST(GroupCommit, ConcurrentWritersShareCommitsAndKeepTheirOwnStatus) {
  GroupCommit<int> group;
  std::mutex seen_mu;
  std::multiset<int> committed;
  std::set<int> returned_before_commit;
  std::atomic<int> failures{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < 8; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < 50; ++i) {
        const int batch = w * 1000 + i;
        Status status = group.submit(batch, [&](GroupCommit<int>::Group& batches) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));  // an fsync
          std::lock_guard lock(seen_mu);
          for (auto* pending : batches) {
            committed.insert(*pending->batch);
            pending->status = *pending->batch % 7 == 0
                                  ? Status(StatusCode::kInvalidArgument, "batch refused")
                                  : Status::ok();
          }
        });
        std::lock_guard lock(seen_mu);
        if (committed.count(batch) != 1) returned_before_commit.insert(batch);
        if (status.isOk() != (batch % 7 != 0)) ++failures;
      }
    });
  }
  for (std::thread& t : writers) t.join();
  EXPECT_EQ(committed.size(), 400u);
  EXPECT_TRUE(returned_before_commit.empty());
  EXPECT_EQ(failures, 0) << "a caller got another batch's status";
  EXPECT_LT(group.commits(), 400) << "no two writers ever shared a commit";
}

// The store's appendSamples through it: four ranks' writers and one writing to a run that does
// not exist, at once. The stray batch fails alone, with the store's usual NOT_FOUND, and every
// other batch is in the file whole.
TEST(GroupCommit, TheStoresSampleWritersShareCommitsAndOneBadBatchFailsAlone) {
  test_support::TempDir dir;
  auto store = test_support::openOrDie(dir.file("fc.db"));
  ASSERT_NE(store, nullptr);
  auto run = store->createRun("link-flap", json{{"name", "link-flap"}}, "netns-lab");
  ASSERT_TRUE(run.isOk());
  std::atomic<int> bad_ok{0};
  std::atomic<int> good_failed{0};
  std::vector<std::thread> writers;
  for (int rank = 0; rank < 5; ++rank) {
    writers.emplace_back([&, rank] {
      for (int flush = 0; flush < 20; ++flush) {
        std::vector<core::Sample> batch;
        for (int i = 0; i < 50; ++i) batch.push_back({rank, flush * 50 + i, 0.0, 3.0, 1024});
        if (rank == 4) {  // the stray writer
          Status status = store->appendSamples(*run + 100, batch);
          if (status.isOk() || status.code() != StatusCode::kNotFound) ++bad_ok;
        } else if (!store->appendSamples(*run, batch).isOk()) {
          ++good_failed;
        }
      }
    });
  }
  for (std::thread& t : writers) t.join();
  EXPECT_EQ(bad_ok, 0);
  EXPECT_EQ(good_failed, 0);
  test_support::RawDb raw(dir.file("fc.db"));
  EXPECT_EQ(raw.scalar("SELECT COUNT(*) FROM samples"), std::to_string(4 * 20 * 50));
  EXPECT_EQ(raw.scalar("SELECT COUNT(DISTINCT rank || '/' || iteration) FROM samples"),
            std::to_string(4 * 20 * 50));
}

}  // namespace
}  // namespace fabric_chaos::store
