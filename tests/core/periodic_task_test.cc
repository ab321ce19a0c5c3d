// PeriodicTask: a first call at once, then one per period, none after stop(); and stop() does not
// wait out a long period (this test would hit its ctest timeout if it did).

#include "core/periodic_task.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace fabric_chaos::core {
namespace {

TEST(PeriodicTask, CallsAtOnceThenEveryPeriodAndNeverAfterStop) {
  std::atomic<int> calls{0};
  PeriodicTask task(5, [&] { ++calls; });
  for (int i = 0; i < 500 && calls < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(calls, 4);
  task.stop();
  const int after_stop = calls;
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(calls, after_stop);
  task.stop();  // a second stop is harmless
}

TEST(PeriodicTask, StopWakesAWaitOfAnHour) {
  std::atomic<int> calls{0};
  {
    PeriodicTask task(3'600'000, [&] { ++calls; });
    while (calls == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }  // the destructor stops it
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace fabric_chaos::core
