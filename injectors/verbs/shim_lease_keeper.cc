#include "injectors/verbs/shim_lease_keeper.h"

#include <algorithm>
#include <set>
#include <utility>

#include "core/log.h"

namespace fabric_chaos::injectors {

ShimLeaseKeeper::ShimLeaseKeeper(sys::VerbsShimChannel& channel, std::chrono::milliseconds interval)
    : channel_(channel), interval_(interval), thread_([this] { run(); }) {}

ShimLeaseKeeper::~ShimLeaseKeeper() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void ShimLeaseKeeper::hold(const std::string& fault_key, std::vector<pid_t> pids) {
  std::lock_guard lock(mu_);
  held_[fault_key] = {std::move(pids), ++generation_};
}

std::vector<pid_t> ShimLeaseKeeper::release(const std::string& fault_key) {
  std::lock_guard lock(mu_);
  auto it = held_.find(fault_key);
  if (it == held_.end()) return {};
  std::vector<pid_t> pids = std::move(it->second.pids);
  held_.erase(it);
  return pids;
}

std::vector<pid_t> ShimLeaseKeeper::held(const std::string& fault_key) const {
  std::lock_guard lock(mu_);
  auto it = held_.find(fault_key);
  return it == held_.end() ? std::vector<pid_t>{} : it->second.pids;
}

std::optional<std::string> ShimLeaseKeeper::holderOf(pid_t pid) const {
  std::lock_guard lock(mu_);
  for (const auto& [key, held] : held_) {
    if (std::find(held.pids.begin(), held.pids.end(), pid) != held.pids.end()) return key;
  }
  return std::nullopt;
}

void ShimLeaseKeeper::renewAll() {
  std::map<std::string, Held> snapshot;
  {
    std::lock_guard lock(mu_);
    snapshot = held_;
  }
  // Outside the lock: a slow program (up to the channel's deadline) must not block hold/release.
  std::set<pid_t> renewed;
  std::set<pid_t> lost;
  std::map<pid_t, std::string> lapsed;  // why, for the one line worth logging
  for (const auto& [key, held] : snapshot) {
    for (pid_t pid : held.pids) {
      if (!renewed.insert(pid).second) continue;
      const core::Status status = channel_.renew(pid);
      // Exited: nothing left to renew, nothing worth a log line.
      if (status.code() == core::StatusCode::kNotFound) lost.insert(pid);
      // The shim disarmed itself: the lease ran out before this renewal (a stalled agent).
      if (status.code() == core::StatusCode::kFailedPrecondition) {
        lost.insert(pid);
        lapsed[pid] = status.message();
      }
    }
  }
  if (lost.empty()) return;
  std::lock_guard lock(mu_);
  for (auto& entry : held_) {
    const std::string& key = entry.first;  // a name the lambda can capture (clang 14)
    // A fault held again meanwhile (applied anew) has fresh leases: not ours to drop.
    auto before = snapshot.find(key);
    if (before == snapshot.end() || before->second.generation != entry.second.generation) {
      continue;
    }
    std::erase_if(entry.second.pids, [&](pid_t pid) {
      if (lost.count(pid) == 0) return false;
      if (auto why = lapsed.find(pid); why != lapsed.end()) {
        core::logWarn("verbs shim: " + why->second + "; process " + std::to_string(pid) +
                      " is no longer faulted by " + key);
      }
      return true;
    });
  }
}

void ShimLeaseKeeper::run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, interval_, [this] { return stopping_; });
    if (stopping_) return;
    lock.unlock();
    renewAll();
    lock.lock();
  }
}

}  // namespace fabric_chaos::injectors
