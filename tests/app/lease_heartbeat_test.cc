// LeaseHeartbeat: beats while healthy, none while not, and none after stop().

#include "app/lease_heartbeat.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace fabric_chaos::app {
namespace {

bool waitFor(const std::function<bool()>& condition) {
  for (int i = 0; i < 500 && !condition(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

TEST(LeaseHeartbeat, BeatsOnlyWhileTheEngineIsHealthyAndNeverAfterStop) {
  std::atomic<bool> healthy{true};
  std::atomic<int> beats{0};
  std::atomic<int> checks{0};
  LeaseHeartbeat heartbeat(
      5,
      [&] {
        ++checks;
        return healthy.load();
      },
      [&] { ++beats; });
  ASSERT_TRUE(waitFor([&] { return beats >= 3; }));

  healthy = false;
  const int checks_before = checks;
  ASSERT_TRUE(waitFor([&] { return checks >= checks_before + 2; }));  // a whole check with it off
  const int beats_while_wedged = beats;
  ASSERT_TRUE(waitFor([&] { return checks >= checks_before + 6; }));
  EXPECT_EQ(beats, beats_while_wedged);

  healthy = true;
  ASSERT_TRUE(waitFor([&] { return beats > beats_while_wedged; }));
  heartbeat.stop();
  const int after_stop = beats;
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(beats, after_stop);
}

}  // namespace
}  // namespace fabric_chaos::app
