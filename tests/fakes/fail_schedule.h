#pragma once
// The Nth-call failure switch shared by the fakes (LevelDB's fault-injection Env, Beast's
// fail_count): each counted call asks next(); the calls scheduled with failOn() get their Status
// instead of doing anything. Not thread-safe by itself; the fakes hold their own mutex.

#include <map>
#include <optional>

#include "core/status.h"

namespace fabric_chaos::fakes {

class FailSchedule {
 public:
  // The nth counted call (1-based, from now on or from the start: counting never resets)
  // returns status.
  void failOn(int n, core::Status status) { failures_[n] = std::move(status); }
  // Counts one call; the Status to return when this call is scheduled to fail.
  std::optional<core::Status> next() {
    ++calls_;
    auto it = failures_.find(calls_);
    if (it == failures_.end()) return std::nullopt;
    return it->second;
  }
  int calls() const { return calls_; }

 private:
  int calls_ = 0;
  std::map<int, core::Status> failures_;
};

}  // namespace fabric_chaos::fakes
