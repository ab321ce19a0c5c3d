// RefusalLimiter: one recorded refusal per source and window, the rest counted, 429 past the
// limit, summaries of ended windows, bounded memory.

#include "server/auth/refusal_limiter.h"

#include <gtest/gtest.h>

#include <string>

namespace fabric_chaos::auth {
namespace {

using Verdict = RefusalLimiter::Verdict;

RefusalLimiterOptions options(int64_t max_per_window, size_t max_sources = 4096) {
  RefusalLimiterOptions o;
  o.window_ms = 1000;
  o.max_per_window = max_per_window;
  o.max_sources = max_sources;
  return o;
}

TEST(RefusalLimiter, TheFirstRefusalOfAWindowIsRecordedAndTheRestCounted) {
  RefusalLimiter limiter(options(100));
  EXPECT_EQ(limiter.refused("a", 0), Verdict::kRecord);
  EXPECT_EQ(limiter.refused("a", 10), Verdict::kCount);
  EXPECT_EQ(limiter.refused("b", 20), Verdict::kRecord);
  EXPECT_EQ(limiter.refused("a", 999), Verdict::kCount);
  EXPECT_TRUE(limiter.takeEnded(999).empty());
  // a's window ends at 1000: its summary; b (one refusal, nothing coalesced) needs none.
  auto ended = limiter.takeEnded(1020);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].source, "a");
  EXPECT_EQ(ended[0].window_start_ms, 0);
  EXPECT_EQ(ended[0].refusals, 2);
  EXPECT_EQ(ended[0].throttled, 0);
  EXPECT_TRUE(limiter.takeEnded(5000).empty());
  EXPECT_EQ(limiter.refused("a", 5000), Verdict::kRecord);
}

TEST(RefusalLimiter, ASourceAtTheLimitIsThrottledUntilItsWindowEnds) {
  RefusalLimiter limiter(options(3));
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(limiter.throttle("a", i).has_value());
    limiter.refused("a", i);
  }
  EXPECT_EQ(limiter.throttle("a", 100), 900);
  EXPECT_EQ(limiter.throttle("a", 400), 600);
  EXPECT_FALSE(limiter.throttle("b", 400).has_value());
  EXPECT_FALSE(limiter.throttle("a", 1000).has_value()) << "a new window";
  auto ended = limiter.takeEnded(1000);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].refusals, 2);
  EXPECT_EQ(ended[0].throttled, 2);
}

TEST(RefusalLimiter, ARefusalAfterTheWindowClosesItIntoASummary) {
  RefusalLimiter limiter(options(100));
  limiter.refused("a", 0);
  limiter.refused("a", 1);
  EXPECT_EQ(limiter.refused("a", 1500), Verdict::kRecord);
  auto ended = limiter.takeEnded(1500);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].window_start_ms, 0);
  EXPECT_EQ(ended[0].refusals, 1);
}

TEST(RefusalLimiter, MemoryIsBoundedByClosingTheOldestWindowEarly) {
  RefusalLimiter limiter(options(100, 2));
  limiter.refused("a", 0);
  limiter.refused("a", 1);
  limiter.refused("b", 2);
  limiter.refused("c", 3);  // a is closed to make room, its count kept
  auto ended = limiter.takeEnded(4);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].source, "a");
  EXPECT_EQ(ended[0].refusals, 1);
  EXPECT_EQ(limiter.refused("b", 5), Verdict::kCount) << "b's window is still open";
}

TEST(RefusalLimiter, TakingAllClosesEveryOpenWindow) {
  RefusalLimiter limiter(options(100));
  limiter.refused("a", 0);
  limiter.refused("a", 1);
  limiter.refused("b", 2);
  limiter.refused("b", 3);
  EXPECT_EQ(limiter.takeEnded(4, /*all=*/true).size(), 2u);
  EXPECT_TRUE(limiter.takeEnded(4, true).empty());
}

}  // namespace
}  // namespace fabric_chaos::auth
