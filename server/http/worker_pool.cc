#include "server/http/worker_pool.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

namespace fabric_chaos::http {

namespace {

void idleThisThread() {
  static std::atomic<bool> warned{false};
  const sched_param param{};
  if (::sched_setscheduler(static_cast<pid_t>(::syscall(SYS_gettid)), SCHED_IDLE, &param) != 0 &&
      !warned.exchange(true)) {
    std::fprintf(stderr, "fabric-chaos http: cannot lower the bulk handlers' priority: %s\n",
                 std::strerror(errno));
  }
}

}  // namespace

WorkerPool::WorkerPool(int threads, Priority priority) : work_(boost::asio::make_work_guard(ioc_)) {
  threads_.reserve(static_cast<size_t>(threads));
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this, priority] {
      if (priority == Priority::kIdle) idleThisThread();
      for (;;) {
        try {
          ioc_.run();
          return;
        } catch (const std::exception& e) {
          // Handlers catch their own exceptions; this is allocation failure and the like.
          std::fprintf(stderr, "fabric-chaos http: unexpected exception in a handler: %s\n",
                       e.what());
        }
      }
    });
  }
}

WorkerPool::~WorkerPool() { join(); }

void WorkerPool::join() {
  work_.reset();
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  threads_.clear();
}

}  // namespace fabric_chaos::http
