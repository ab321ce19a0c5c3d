#include "injectors/sys/route_socket_pool.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "injectors/sys/netns.h"

namespace fabric_chaos::sys {

RouteSocketPool::RouteSocketPool() : owner_pid_(static_cast<int>(::getpid())) {}

RouteSocketPool::~RouteSocketPool() {
  if (static_cast<int>(::getpid()) != owner_pid_) {
    (void)reaper_.release();  // the parent's thread: not ours to join
    return;
  }
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  reaper_cv_.notify_all();
  if (reaper_) reaper_->join();
}

RouteSocketPool& RouteSocketPool::shared() {
  static RouteSocketPool pool;
  return pool;
}

core::Status RouteSocketPool::with(const std::string& netns,
                                   const std::function<core::Status(nl_sock*)>& fn) {
  if (netns.empty() || static_cast<int>(::getpid()) != owner_pid_) {
    return withFreshSocket(netns, fn);
  }
  struct stat st {};
  if (::stat(("/run/netns/" + netns).c_str(), &st) != 0) {
    // runInNetns has the words for every case (an invalid name, a missing namespace).
    return runInNetns(netns, [] { return core::Status::ok(); });
  }
  const uint64_t device = st.st_dev;
  const uint64_t inode = st.st_ino;

  NlSocket sock;
  {
    std::lock_guard lock(mu_);
    Namespace& ns = namespaces_[netns];
    if (ns.device != device || ns.inode != inode) {
      ns.idle.clear();  // the name now means another namespace
      ns.device = device;
      ns.inode = inode;
    }
    if (!ns.idle.empty()) {
      sock = std::move(ns.idle.back().sock);
      ns.idle.pop_back();
    }
  }
  if (!sock) {
    core::Status opened = runInNetns(netns, [&]() -> core::Status {
      auto fresh = connectRoute();
      if (!fresh.isOk()) return fresh.status();
      sock = std::move(fresh.value());
      return core::Status::ok();
    });
    if (!opened.isOk()) return opened;
  }

  core::Status status = fn(sock.get());
  if (!status.isOk()) return status;  // the socket closes here
  std::lock_guard lock(mu_);
  Namespace& ns = namespaces_[netns];
  if (ns.idle.empty() && ns.device == 0 && ns.inode == 0) {  // the reaper emptied it meanwhile
    ns.device = device;
    ns.inode = inode;
  }
  if (ns.device == device && ns.inode == inode && !stopping_) {
    ns.idle.push_back({std::move(sock), std::chrono::steady_clock::now()});
    if (!reaper_) reaper_ = std::make_unique<std::thread>([this] { reaperLoop(); });
  }
  return status;
}

core::Status RouteSocketPool::withFreshSocket(const std::string& netns,
                                              const std::function<core::Status(nl_sock*)>& fn) {
  return runInNetns(netns, [&]() -> core::Status {
    auto sock = connectRoute();
    if (!sock.isOk()) return sock.status();
    return fn(sock->get());
  });
}

void RouteSocketPool::reaperLoop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    reaper_cv_.wait_for(lock, kIdleLimit / 4);
    const auto now = std::chrono::steady_clock::now();
    for (auto it = namespaces_.begin(); it != namespaces_.end();) {
      std::erase_if(it->second.idle,
                    [&](const Idle& idle) { return now - idle.since > kIdleLimit; });
      it = it->second.idle.empty() ? namespaces_.erase(it) : std::next(it);
    }
  }
}

void RouteSocketPool::closeAll() {
  std::lock_guard lock(mu_);
  namespaces_.clear();
}

void releasePooledNetnsSockets() { RouteSocketPool::shared().closeAll(); }

size_t RouteSocketPool::idleSockets() {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [name, ns] : namespaces_) n += ns.idle.size();
  return n;
}

}  // namespace fabric_chaos::sys
