#pragma once
// Private to injectors/sys: NETLINK_ROUTE sockets opened once inside a named network namespace and
// reused from any thread. A netlink socket stays bound to the namespace it was opened in, so only
// opening one needs a thread that setns()es (runInNetns); reusing it takes a fault's link change
// from ~120 us (thread, setns, socket, GETLINK, NEWLINK) to one round trip.
//
// A pooled socket holds a reference on its namespace, which keeps a deleted namespace (and its
// devices) alive. So sockets idle for longer than kIdleLimit are closed by a reaper thread, a
// namespace recreated under the same name (another inode) never gets the old one's sockets, and
// closeAll() lets a process that brings a lab down drop them at once. A child forked from the
// owning process (serve's guardian) never touches the pool, whose lock another thread may have
// held at the fork: it opens a socket per call.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "injectors/sys/netlink_status.h"

namespace fabric_chaos::sys {

class RouteSocketPool {
 public:
  static constexpr std::chrono::seconds kIdleLimit{10};

  RouteSocketPool();
  ~RouteSocketPool();
  RouteSocketPool(const RouteSocketPool&) = delete;
  RouteSocketPool& operator=(const RouteSocketPool&) = delete;

  // Runs fn with a socket bound to /run/netns/NETNS (kNotFound when it does not exist). The
  // socket goes back to the pool when fn succeeds; one that saw an error is closed, so that no
  // half-read reply is left for the next user. netns "" is the caller's own namespace, which
  // depends on the calling thread: a fresh socket, never pooled.
  core::Status with(const std::string& netns, const std::function<core::Status(nl_sock*)>& fn);

  void closeAll();
  // Pooled, idle sockets (for tests).
  size_t idleSockets();

  // The process's pool.
  static RouteSocketPool& shared();

 private:
  struct Idle {
    NlSocket sock;
    std::chrono::steady_clock::time_point since;
  };
  struct Namespace {
    uint64_t device = 0;  // of /run/netns/NAME: another namespace under the same name differs
    uint64_t inode = 0;
    std::vector<Idle> idle;
  };

  void reaperLoop();
  // A socket for one call, opened inside netns and closed after it.
  static core::Status withFreshSocket(const std::string& netns,
                                      const std::function<core::Status(nl_sock*)>& fn);

  std::mutex mu_;
  std::condition_variable reaper_cv_;
  std::map<std::string, Namespace> namespaces_;
  bool stopping_ = false;
  const int owner_pid_;
  std::unique_ptr<std::thread> reaper_;  // started with the first pooled socket
};

}  // namespace fabric_chaos::sys
