#pragma once
// The real Clock: steady_clock with an interruptible sleep. Thread-safe.

#include <condition_variable>
#include <mutex>

#include "core/clock.h"

namespace fabric_chaos::core {

class SteadyClock : public Clock {
 public:
  int64_t nowNs() override { return steadyNowNs(); }
  bool sleepUntilNs(int64_t deadline_ns) override;
  void wake() override;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t wake_generation_ = 0;
};

}  // namespace fabric_chaos::core
