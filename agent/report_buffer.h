#pragma once
// What an agent-side workload's ranks report, held until the controller long-polls it.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "core/sample.h"

namespace fabric_chaos::agent {

// The WorkloadListener behind one agent-side workload: keeps what the ranks report, numbered,
// until the controller long-polls it. Times are kept as the ranks wrote them, steady-clock ns minus
// the workload's origin_ns (0: the agent's raw CLOCK_MONOTONIC). Samples and events beyond
// `capacity` push out the oldest, which the next reader learns from a "reports_dropped" event; rank
// exits are never dropped. Thread-safe.
class ReportBuffer : public WorkloadListener {
 public:
  ReportBuffer(int64_t origin_ns, int ranks, size_t capacity);

  void onSamples(const std::vector<core::Sample>& samples) override;
  void onEvent(int rank, double t_ms, const std::string& kind,
               const nlohmann::json& detail) override;
  void onRankExit(int rank, int exit_code) override;

  struct Batch {
    int64_t next = 0;  // pass as `after` to get what follows
    nlohmann::json samples =
        nlohmann::json::array();  // [[rank, iteration, start_ns, dur_ns, bytes]]
    nlohmann::json events = nlohmann::json::array();  // [{"rank", "t_ns", "kind", "detail"}]
    nlohmann::json exits = nlohmann::json::array();   // [{"rank", "code"}]
    int running = 0;                                  // ranks that have not exited
    bool complete = false;  // every rank has exited (or the workload was stopped) and nothing is
                            // left after `next`
    int64_t dropped_total = 0;
  };
  // Everything after sequence number `after` (at most max_entries samples and events), waiting up
  // to wait_ms for something to arrive when there is nothing yet.
  Batch fetch(int64_t after, size_t max_entries, int wait_ms);
  // The workload's handle has stopped: every report is in, nothing more will come.
  void markStopped();
  // Wakes every waiting fetch for good (agent shutdown).
  void close();
  bool complete() const;

 private:
  struct Entry {
    int64_t seq = 0;
    bool is_event = false;
    int rank = 0;
    int64_t iteration = 0;  // samples
    int64_t t_ns = 0;       // sample start or event time
    int64_t duration_ns = 0;
    int64_t bytes = 0;
    std::string kind;  // events
    nlohmann::json detail;
  };
  struct Exit {
    int64_t seq = 0;
    int rank = 0;
    int code = 0;
  };
  void pushLocked(Entry entry);
  int64_t exitsBetweenLocked(int64_t after, int64_t through) const;

  const int64_t origin_ns_;
  const int ranks_;
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Entry> entries_;
  std::vector<Exit> exits_;
  int64_t last_seq_ = 0;
  int64_t evicted_through_seq_ = 0;  // every sample/event up to here has been dropped
  int64_t dropped_total_ = 0;
  bool stopped_ = false;
  bool closed_ = false;
};

}  // namespace fabric_chaos::agent
