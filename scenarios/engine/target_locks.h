#pragma once
// Which queued runs may start now. A run holds every target it touches (its workload hosts, its
// fault interfaces and the hosts they belong to) from start to end, so two runs never disturb the
// same part of a fabric. Runs start in queue order; a later run may overtake a waiting one only if
// it shares no target with it, so a waiting run is never starved by later overlapping runs.
// Pure bookkeeping, no I/O and no locking: the engine calls it under its own mutex.

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "scenarios/model.h"
#include "scenarios/topology.h"

namespace fabric_chaos::scenarios {

// The targets a run of `scenario` on `fabric` holds: "FABRIC/host/NAME" for every workload host
// and every host a fault target belongs to, "FABRIC/if/NETNS/IFNAME" for every fault interface
// (after planning). Fails as planFaults does (unknown target, bad timing).
core::Result<std::set<std::string>> runTargets(const Scenario& scenario, const Fabric& fabric);

// Why a queued run has not started.
struct WaitReason {
  std::vector<int64_t> holders;      // running runs holding some of its targets
  std::vector<int64_t> ahead;        // earlier queued runs that wait for some of its targets
  std::vector<std::string> targets;  // the contended targets, sorted
  bool capacity = false;             // its targets are free; every run slot is taken
  bool operator==(const WaitReason& other) const {
    return holders == other.holders && ahead == other.ahead && targets == other.targets &&
           capacity == other.capacity;
  }
  bool operator!=(const WaitReason& other) const { return !(*this == other); }
};

class TargetLocks {
 public:
  explicit TargetLocks(int max_running) : max_running_(max_running < 1 ? 1 : max_running) {}

  // Appends a run to the queue. A run with no targets conflicts with nothing.
  void enqueue(int64_t run_id, std::set<std::string> targets);
  // Drops a queued run (aborted before it started); false when it is not queued.
  bool dequeue(int64_t run_id);
  // A running run ended: its targets are free again. Unknown ids are ignored.
  void release(int64_t run_id);

  // Starts, in queue order, every queued run whose targets are neither held by a running run nor
  // wanted by an earlier queued run that is still waiting, while fewer than max_running run.
  // Returns the started ids (they now hold their targets) and refreshes waiting().
  std::vector<int64_t> admit();

  // Why each still-queued run waits, as of the last admit().
  const std::map<int64_t, WaitReason>& waiting() const { return waiting_; }
  std::vector<int64_t> queued() const;
  std::vector<int64_t> running() const;
  bool isQueued(int64_t run_id) const;

 private:
  struct Entry {
    int64_t run_id;
    std::set<std::string> targets;
  };

  int max_running_;
  std::deque<Entry> queue_;
  std::map<int64_t, std::set<std::string>> running_;
  std::map<int64_t, WaitReason> waiting_;
};

}  // namespace fabric_chaos::scenarios
