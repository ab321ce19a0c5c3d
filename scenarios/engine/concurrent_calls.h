#pragma once
// Makes the agent calls of one fault instant at the same moment, on threads started before the
// instant: starting a thread per call at the instant put ~0.1 ms of thread creation between
// consecutive ports and spread 16 ports' applies over 4-7 ms (bench/inject_bench, part 3).
// One instance belongs to one run's fault timeline; concurrent run() calls take turns.

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::scenarios {

class ConcurrentCalls {
 public:
  ConcurrentCalls() = default;
  ~ConcurrentCalls();
  ConcurrentCalls(const ConcurrentCalls&) = delete;
  ConcurrentCalls& operator=(const ConcurrentCalls&) = delete;

  // Starts workers so that `width` calls can run at once (the caller's thread is one of them), up
  // to a limit; beyond it, calls wait for a free worker. Starting them before the first instant
  // keeps thread creation off the schedule. A thread that cannot be started only means fewer.
  void reserve(size_t width);
  // Runs every call, concurrently, and returns their results in order once all have returned.
  std::vector<core::Status> run(const std::vector<std::function<core::Status()>>& calls);
  size_t workers() const { return workers_.size(); }

  // More threads than this only queue on the cores.
  static constexpr size_t kMaxWorkers = 64;

 private:
  void workerLoop();
  // Takes the next call of the current batch, if any is left; false when none is.
  bool runNext(std::unique_lock<std::mutex>& lock);

  std::mutex run_mu_;  // one batch at a time
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  const std::vector<std::function<core::Status()>>* batch_ = nullptr;
  std::vector<core::Status>* results_ = nullptr;
  size_t next_ = 0;      // next call of batch_ to take
  size_t finished_ = 0;  // calls of batch_ that returned
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace fabric_chaos::scenarios
