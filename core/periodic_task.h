#pragma once
// Calls a function on its own thread now and then every period_ms until stop(): serve's lease
// heartbeat and its retention pass. stop() wakes the wait at once and joins the thread (a call in
// progress finishes first); the destructor stops.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace fabric_chaos::core {

class PeriodicTask {
 public:
  PeriodicTask(int64_t period_ms, std::function<void()> tick);
  ~PeriodicTask();
  PeriodicTask(const PeriodicTask&) = delete;
  PeriodicTask& operator=(const PeriodicTask&) = delete;
  void stop();

 private:
  void loop();

  const int64_t period_ms_;
  std::function<void()> tick_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace fabric_chaos::core
