#pragma once
// Time sources. Every timestamp that crosses a process boundary inside one machine is
// CLOCK_MONOTONIC nanoseconds (steady_clock on Linux): the workload ranks, the injectors and the
// engine all read the same clock, so a sample and a fault event can be compared directly.
// Wall-clock time is used only for display (created_at and the like).

#include <chrono>
#include <cstdint>

namespace fabric_chaos::core {

inline int64_t steadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline int64_t wallNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline int64_t wallNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A clock that tests can drive by hand; the engine takes one so that scheduling logic is testable.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t nowNs() = 0;
  // Sleeps until nowNs() >= deadline_ns or until wake() is called; returns false if woken early.
  virtual bool sleepUntilNs(int64_t deadline_ns) = 0;
  virtual void wake() = 0;
};

}  // namespace fabric_chaos::core
