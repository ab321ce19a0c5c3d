#pragma once
// Keeps the verbs shims' leases of the faults in force: one thread renews every held process
// every `interval` (a third of the lease, so that one renewal may fail, or one slow program
// delay the round, without a shim disarming). A process that has exited, or whose lease already
// ran out (its shim disarmed itself), is dropped: renewing it again can never succeed. Other
// failures (a program slow to answer) are tried again next round. Faults are held by their fault
// key (injectors/injector.h faultKey). Any thread may call it; the destructor stops and joins
// the thread, and the channel must outlive it.

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "injectors/sys/verbs_shim_channel.h"

namespace fabric_chaos::injectors {

class ShimLeaseKeeper {
 public:
  ShimLeaseKeeper(sys::VerbsShimChannel& channel, std::chrono::milliseconds interval);
  ~ShimLeaseKeeper();
  ShimLeaseKeeper(const ShimLeaseKeeper&) = delete;
  ShimLeaseKeeper& operator=(const ShimLeaseKeeper&) = delete;

  // Renews these processes for `fault_key` from now on, instead of what it held before.
  void hold(const std::string& fault_key, std::vector<pid_t> pids);
  // Stops renewing `fault_key`'s processes; returns the ones it still held.
  std::vector<pid_t> release(const std::string& fault_key);
  // The processes held for `fault_key`, in hold's order less the dropped ones.
  std::vector<pid_t> held(const std::string& fault_key) const;
  // The fault key holding `pid`, if any.
  std::optional<std::string> holderOf(pid_t pid) const;
  // One round: renews every held process now and drops the lost ones (the thread's tick).
  void renewAll();

 private:
  struct Held {
    std::vector<pid_t> pids;
    uint64_t generation = 0;  // which hold() this is, so a round never drops a newer one's
  };

  void run();

  sys::VerbsShimChannel& channel_;
  const std::chrono::milliseconds interval_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  uint64_t generation_ = 0;
  std::map<std::string, Held> held_;
  std::thread thread_;  // last: started once everything it reads exists
};

}  // namespace fabric_chaos::injectors
