#include "core/periodic_task.h"

#include <chrono>

namespace fabric_chaos::core {

PeriodicTask::PeriodicTask(int64_t period_ms, std::function<void()> tick)
    : period_ms_(period_ms), tick_(std::move(tick)) {
  thread_ = std::thread([this] { loop(); });
}

PeriodicTask::~PeriodicTask() { stop(); }

void PeriodicTask::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PeriodicTask::loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    tick_();
    lock.lock();
    cv_.wait_for(lock, std::chrono::milliseconds(period_ms_), [&] { return stopping_; });
  }
}

}  // namespace fabric_chaos::core
