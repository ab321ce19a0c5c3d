#include "app/lease_heartbeat.h"

#include <chrono>

namespace fabric_chaos::app {

LeaseHeartbeat::LeaseHeartbeat(int64_t period_ms, std::function<bool()> healthy,
                               std::function<void()> beat)
    : period_ms_(period_ms), healthy_(std::move(healthy)), beat_(std::move(beat)) {
  thread_ = std::thread([this] { loop(); });
}

LeaseHeartbeat::~LeaseHeartbeat() { stop(); }

void LeaseHeartbeat::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LeaseHeartbeat::loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    if (healthy_()) beat_();
    lock.lock();
    cv_.wait_for(lock, std::chrono::milliseconds(period_ms_), [&] { return stopping_; });
  }
}

}  // namespace fabric_chaos::app
