#pragma once
// Renews serve's lease with its guardian (app/guardian.h) every period_ms while healthy() says
// the engine is making progress. A wedged run (Engine::holdsFaultsWithoutProgress) or a process
// that no longer runs at all (deadlock, SIGSTOP) stops the beats, and the guardian kills serve
// and reverts its faults after the lease. Owns one thread; stop() and the destructor join it.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace fabric_chaos::app {

class LeaseHeartbeat {
 public:
  LeaseHeartbeat(int64_t period_ms, std::function<bool()> healthy, std::function<void()> beat);
  ~LeaseHeartbeat();
  LeaseHeartbeat(const LeaseHeartbeat&) = delete;
  LeaseHeartbeat& operator=(const LeaseHeartbeat&) = delete;
  void stop();

 private:
  void loop();

  const int64_t period_ms_;
  std::function<bool()> healthy_;
  std::function<void()> beat_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace fabric_chaos::app
