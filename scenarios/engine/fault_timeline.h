#pragma once
// The faults one run holds on the fabric, from apply to a confirmed revert.
// - Journal: prepare() captures the state of every (target, resource, kind) the plan touches and
//   journals it once, before the first apply, so that no scheduled instant waits for an fsync;
//   a flap pattern's phases share that one entry, marked reverted when its last phase ends.
// - Stacks: per target resource (scenarios/composition.h) the run's faults form a stack: the
//   first applies, faults that overlap it only join it, the last one out restores the captured
//   state, so crossing and nested windows always end where the run found the fabric.
// - Failures: a revert that fails keeps its stack and is retried with back-off (retryDue,
//   revertAll); what still fails when the run ends is reported by left(), and the journal keeps
//   it for start-up recovery.
// - Timing: the faults of one instant go to their agents concurrently; events and journal marks
//   are written by the RunRecorder, off the critical path. Agents that act on schedule (remote
//   ones) get their faults, and their planned reverts, leadMs() ahead of the instant and act on
//   them by their own clocks, so a thousand hosts change within their timers' error of each
//   other, not over the fan-out.
// Run thread only, except activeCount(), which any thread may read.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "core/clock.h"
#include "core/status.h"
#include "scenarios/engine/agent_directory.h"
#include "scenarios/engine/concurrent_calls.h"
#include "scenarios/engine/run_recorder.h"
#include "scenarios/plan.h"
#include "store/store.h"

namespace fabric_chaos::scenarios {

// Back-off between revert attempts: 20 ms, doubling, at most 1 s.
int64_t revertRetryDelayMs(int attempts);

struct FaultTimelineDeps {
  store::Store* store = nullptr;
  AgentDirectory* agents = nullptr;
  core::Clock* clock = nullptr;
  RunRecorder* recorder = nullptr;
  int64_t run_id = 0;
  int64_t origin_ns = 0;  // the run clock's origin: event times are ms from here
  // Called whenever an agent call returns and on every retry pass: the run is not wedged.
  std::function<void()> progressed;
  // EngineOptions::schedule_above_agents.
  int schedule_above_agents = -1;
};

// A fault whose revert never succeeded: the run that owned it cannot pass.
struct LeftFault {
  std::string kind;
  ResolvedTarget target;
  int64_t journal_id = 0;
  int attempts = 0;
  std::string error;
};

class FaultTimeline {
 public:
  FaultTimeline(FaultTimelineDeps deps, Fabric fabric);
  // The fabric as resolved when the run started: which agent acts on each target.
  void setFabric(Fabric fabric) { fabric_ = std::move(fabric); }

  // Captures and journals, once per (target, resource, kind), the state the plan's faults will
  // change. Before the first apply; an error (an agent refusing a target) touches nothing.
  core::Status prepare(const std::vector<PlannedAction>& plan);

  // Applies planned actions `indices` (of `plan`), all scheduled at `scheduled_ms`, concurrently.
  // Call it leadMs() before the instant: faults for agents that apply on schedule are handed
  // out first, then it sleeps until the instant, calls the other agents, and confirms the
  // scheduled ones. An action whose resource the run already holds through a stacking kind joins
  // that stack. The first error is returned after every action of the instant was tried; a failed
  // action leaves its stack in place (it may be half-applied): revertAll() takes it back.
  core::Status apply(const std::vector<size_t>& indices, const std::vector<PlannedAction>& plan,
                     double scheduled_ms);
  // How long before their instant apply() or revert() must be called for these actions (ms): 0
  // when none goes to an agent that acts on schedule; otherwise enough for the deliveries to reach
  // every agent in time, from the calls this timeline has timed (prepare's captures, earlier
  // deliveries).
  double leadMs(const std::vector<size_t>& indices, const std::vector<PlannedAction>& plan) const;
  // A fault handed out early costs nothing (the agent holds it; a revert cancels it), one handed
  // out late is applied on arrival, out of step with the rest: the lead errs on the long side.
  static constexpr double kMinLeadMs = 100;
  static constexpr double kMaxLeadMs = 5000;
  // When the latest apply of the last apply() came into force (run-clock ms): the agent's own
  // record for scheduled ones, the call's return for the others.
  double lastInForceMs() const { return last_in_force_ms_; }
  // How long apply() waits past the instant for an agent to confirm a scheduled fault.
  static constexpr int64_t kConfirmTimeoutMs = 10000;
  // Ends actions `indices`, concurrently. A stack's state is restored when its last action ends;
  // a failed restore is retried by retryDue() and revertAll(). `scheduled_ms` < 0 for unscheduled
  // reverts; `urgent` skips the observation taken before a revert (a stop counts every ms) and
  // reverts at once. Call it leadMs() before a scheduled instant, as apply().
  void revert(const std::vector<size_t>& indices, const std::string& why, double scheduled_ms,
              bool urgent);
  // Retries the failed reverts whose back-off has passed.
  void retryDue();
  // Asks the agent about each long-running fault in force (its emitter) once per
  // kHealthPeriodMs, and records a fault_unhealthy event, once per fault, when the emitter has
  // stopped before its window ended. Skipped while an instant is due before `quiet_until_ns`:
  // an observation must never delay a scheduled change.
  // A traffic fault's health check also stores its generators' counters as the run's telemetry
  // (scenarios/congestion.h trafficTelemetry), once a second while it is in force.
  void checkHealth(int64_t quiet_until_ns);
  static constexpr int64_t kHealthPeriodMs = 1000;
  // When the next retry is due (steady ns); nullopt when none is pending.
  std::optional<int64_t> nextRetryNs() const;
  // Restores every stack, newest first, then retries the failures with back-off until
  // `give_up_ns`, and closes the journal entries of patterns that never (re)applied. Returns how
  // many stacks were restored now.
  int revertAll(const std::string& why, int64_t give_up_ns);

  std::vector<LeftFault> left() const;
  int activeCount() const { return active_count_.load(); }
  // step -> [first apply, last end], run-clock ms.
  const std::map<int, std::pair<double, double>>& windows() const { return windows_; }

 private:
  void recordTrafficTelemetry(const PlannedAction& action, const nlohmann::json& observed);
  // One journal entry: the state one kind changes on one target resource, captured before the
  // plan's first fault there, shared by every phase of the plan on it.
  struct Pattern {
    int64_t journal_id = 0;
    nlohmann::json prior;
    agent::Agent* agent = nullptr;
    int remaining = 0;      // planned applies not yet made
    std::string last_mark;  // what the journal was last told
  };
  struct Stack {
    uint64_t seq = 0;    // creation order: revertAll goes newest first
    PlannedAction base;  // the action that opened it: its fault is what the agent holds
    injectors::Fault fault;
    std::string pattern;            // key into patterns_
    std::map<size_t, int> members;  // action index -> step
    int attempts = 0;               // failed revert attempts
    int64_t retry_at_ns = 0;        // 0 = no revert pending
    std::string last_error;
    int64_t health_due_ns = 0;  // long-running kinds: next observation
    bool unhealthy = false;     // fault_unhealthy recorded
  };
  // An agent call to make for one action of an instant.
  struct Call {
    size_t index = 0;
    std::string stack;
  };

  // The agent calls of one instant, and when each came into force (run-clock ms).
  struct Outcome {
    core::Status status;
    double in_force_ms = 0;
    bool scheduled = false;
    double delivered_ms = 0;  // scheduled: when the agent had it (run-clock ms)
  };
  std::vector<Outcome> callAgents(const std::vector<Call>& calls, double scheduled_ms);
  // call(i) for each i of `which`, concurrently (calls_); the statuses in the order of `which`.
  std::vector<core::Status> runIndexed(const std::vector<size_t>& which,
                                       const std::function<core::Status(size_t)>& call);
  // Whether `agents` remote agents acting at one instant get it ahead (schedule_above_agents).
  bool handsOutAhead(size_t agents) const;
  // Times calls to scheduling agents, for leadMs(): prepare's captures (one at a time) until
  // the first delivery, the deliveries (`parallel` at once) from then on.
  void timedCapture(int64_t started_ns);
  void timedDelivery(int64_t started_ns, size_t parallel);
  double deliveryCallMs() const;

  std::string stackKey(const PlannedAction& action) const;
  std::string patternKey(const PlannedAction& action) const;
  Stack* holding(size_t index, std::string* key);
  core::Result<Pattern*> patternFor(const PlannedAction& action);
  void mark(Pattern& pattern, const std::string& state);
  // Restores the given stacks' captured state concurrently; the restored ones are gone after.
  // A planned restore (scheduled_ms >= 0, not urgent) on agents that revert on schedule is handed
  // to them before the instant and confirmed after it, as apply() does. Returns, per key, when
  // the restore took effect (or was tried, for one that failed), run-clock ms.
  std::map<std::string, double> restore(const std::vector<std::string>& keys,
                                        const std::string& why, double scheduled_ms, bool urgent);
  void event(const std::string& kind, nlohmann::json detail);
  double msNow() const;
  void updateCount();

  FaultTimelineDeps deps_;
  Fabric fabric_;
  std::map<std::string, Pattern> patterns_;
  std::map<std::string, Stack> stacks_;
  uint64_t next_seq_ = 1;
  std::map<int, std::pair<double, double>> windows_;
  double last_in_force_ms_ = 0;
  // One call to a scheduling agent as timed so far (ms). A delivery costs more than a capture (the
  // agent captures, journals with an fsync and answers), so before the first one is timed a
  // delivery is taken as twice a capture, and at least kUntimedDeliveryMs.
  double capture_ms_ = 0;
  double delivery_ms_ = 0;
  bool delivery_timed_ = false;
  static constexpr double kUntimedDeliveryMs = 20;
  std::atomic<int> active_count_{0};
  ConcurrentCalls calls_;  // last: its workers stop before the rest goes
};

}  // namespace fabric_chaos::scenarios
