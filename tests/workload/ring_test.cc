#include "workload/ring.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "tests/workload/memory_ring.h"

namespace fabric_chaos::workload {
namespace {

using testing::MemoryRing;

float inputValue(int rank, size_t i) { return static_cast<float>((i * 7 + rank * 13) % 1000); }

// Runs `iterations` allreduces on every rank of an in-memory ring and checks that every rank ends
// with the exact element-wise sum (the inputs are small integers, so float sums are exact).
void checkAllreduce(int world, size_t count, int iterations) {
  SCOPED_TRACE("world " + std::to_string(world) + " count " + std::to_string(count));
  MemoryRing ring(world);
  std::vector<std::vector<float>> outputs(world, std::vector<float>(count, -1.0f));
  std::vector<core::Status> results(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      std::vector<float> input(count);
      for (size_t i = 0; i < count; ++i) input[i] = inputValue(r, i);
      RingAllreduce allreduce(r, world, count);
      for (int it = 0; it < iterations && results[r].isOk(); ++it) {
        std::fill(outputs[r].begin(), outputs[r].end(), -1.0f);
        results[r] = allreduce.run(input.data(), outputs[r].data(), &ring.link(r));
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < world; ++r) {
    ASSERT_TRUE(results[r].isOk()) << "rank " << r << ": " << results[r].toString();
    // Reduce-scatter and all-gather: 2(n-1) steps per iteration.
    EXPECT_EQ(ring.calls(r), int64_t{2} * (world - 1) * iterations);
    for (size_t i = 0; i < count; ++i) {
      double expected = 0;
      for (int q = 0; q < world; ++q) expected += inputValue(q, i);
      ASSERT_EQ(outputs[r][i], static_cast<float>(expected)) << "rank " << r << " element " << i;
    }
  }
}

TEST(RingChunkTest, CoversEveryElementOnceWithNearEqualChunks) {
  for (int world : {1, 2, 3, 4, 7}) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{6}, size_t{7}, size_t{1000}, size_t{4099}}) {
      size_t next = 0;
      for (int i = 0; i < world; ++i) {
        ChunkRange c = ringChunk(count, world, i);
        EXPECT_EQ(c.begin, next) << world << " " << count << " " << i;
        EXPECT_TRUE(c.count == count / world || c.count == count / world + 1);
        next = c.begin + c.count;
      }
      EXPECT_EQ(next, count);
    }
  }
}

TEST(RingChunkTest, LongerChunksComeFirst) {
  ChunkRange c0 = ringChunk(10, 4, 0);
  ChunkRange c3 = ringChunk(10, 4, 3);
  EXPECT_EQ(c0.begin, 0u);
  EXPECT_EQ(c0.count, 3u);
  EXPECT_EQ(c3.begin, 8u);
  EXPECT_EQ(c3.count, 2u);
}

TEST(RingAllreduceTest, WorldOfOneIsACopyWithoutALink) {
  std::vector<float> input = {1, 2, 3, 4.5f};
  std::vector<float> output(4, 0);
  RingAllreduce allreduce(0, 1, input.size());
  ASSERT_TRUE(allreduce.run(input.data(), output.data(), nullptr).isOk());
  EXPECT_EQ(output, input);
}

TEST(RingAllreduceTest, SumsExactlyForSeveralWorldSizes) {
  for (int world : {2, 3, 4, 7}) {
    // Divisible, not divisible, fewer elements than ranks, one element per rank.
    for (size_t count : {size_t{1000}, size_t{4099}, static_cast<size_t>(world * 3 + 1),
                         size_t(world), size_t(world - 1), size_t{1}}) {
      checkAllreduce(world, count, 1);
    }
  }
}

TEST(RingAllreduceTest, RepeatedIterationsKeepTheStreamsAligned) {
  checkAllreduce(3, 1001, 5);
  checkAllreduce(7, 65536 + 5, 2);
}

TEST(RingAllreduceTest, LinkFailureAbortsEveryRank) {
  constexpr int kWorld = 4;
  constexpr size_t kCount = 103;
  MemoryRing ring(kWorld);
  ring.failOnCall(2, 4);  // rank 2 fails in its fourth step (the first all-gather step)
  std::vector<core::Status> results(kWorld);
  std::vector<std::thread> threads;
  for (int r = 0; r < kWorld; ++r) {
    threads.emplace_back([&, r] {
      std::vector<float> input(kCount, 1.0f);
      std::vector<float> output(kCount);
      RingAllreduce allreduce(r, kWorld, kCount);
      results[r] = allreduce.run(input.data(), output.data(), &ring.link(r));
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_EQ(results[r].code(), core::StatusCode::kUnavailable) << "rank " << r;
  }
  EXPECT_EQ(results[2].message(), "injected failure");
  EXPECT_EQ(ring.calls(2), 4);
}

}  // namespace
}  // namespace fabric_chaos::workload
