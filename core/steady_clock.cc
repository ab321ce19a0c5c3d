#include "core/steady_clock.h"

namespace fabric_chaos::core {

bool SteadyClock::sleepUntilNs(int64_t deadline_ns) {
  std::unique_lock lock(mu_);
  const uint64_t generation = wake_generation_;
  const auto deadline =
      std::chrono::steady_clock::time_point(std::chrono::nanoseconds(deadline_ns));
  cv_.wait_until(lock, deadline, [&] { return wake_generation_ != generation; });
  return wake_generation_ == generation;
}

void SteadyClock::wake() {
  {
    std::lock_guard lock(mu_);
    ++wake_generation_;
  }
  cv_.notify_all();
}

}  // namespace fabric_chaos::core
