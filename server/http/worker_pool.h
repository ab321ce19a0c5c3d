#pragma once
// Threads that run posted work, optionally at idle CPU priority: the HTTP server's handler pools.
// A pool under SCHED_IDLE gets the CPU the workload's ranks, the engine and the other pool leave
// over, and any of them that wakes takes the core back at once, so that a reader pulling a run's
// samples page after page cannot slow the measurement it reads (docs/api.md, "Who may slow a
// run"). join() lets queued work finish; work posted after it never runs and is destroyed with
// the pool.

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace fabric_chaos::http {

class WorkerPool {
 public:
  enum class Priority { kNormal, kIdle };
  // kIdle puts each thread under SCHED_IDLE (a per-thread policy on Linux); a failure to do so
  // is logged once, not fatal.
  WorkerPool(int threads, Priority priority);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  template <typename F>
  void post(F&& f) {
    boost::asio::post(ioc_, std::forward<F>(f));
  }
  void join();

 private:
  boost::asio::io_context ioc_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;
};

}  // namespace fabric_chaos::http
