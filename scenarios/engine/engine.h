#pragma once
// The scenario engine's front: submit, abort, live status, revert-now and start-up recovery, and
// a dispatcher thread that starts queued runs whose targets are free (TargetLocks), each as a
// RunExecution (scenarios/engine/run_execution.h) on its own thread, at most max_parallel_runs
// at once. Every public method may be called from any thread; a fault is never left applied
// without a trace when a run ends, is aborted or fails (a failed revert ends the run in error
// with fault_left, and the journal keeps the fault for GET /v1/faults and the next start).

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "scenarios/engine/engine_config.h"
#include "scenarios/engine/journal_revert.h"
#include "scenarios/engine/target_locks.h"
#include "scenarios/services.h"

namespace fabric_chaos::scenarios {

class RunExecution;  // scenarios/engine/run_execution.h

class Engine : public RunService, public FaultService {
 public:
  Engine(EngineDeps deps, EngineOptions options);
  ~Engine() override;

  // Reverts every fault the journal does not mark reverted and marks runs left unfinished by a
  // previous process as interrupted. Call before start().
  core::Result<StartupRecovery> recoverAtStartup();
  void start();
  // Aborts every running run (reverting its faults), ends queued ones as aborted and joins every
  // thread. submit() fails afterwards.
  void shutdown();

  core::Result<int64_t> submit(const Scenario& scenario, const std::string& fabric) override;
  // A queued run ends as aborted at once; a running one stops with reason abort_request.
  core::Status abort(int64_t run_id) override;

  // FaultService: an entry left by a finished, failed or interrupted run (a fault_left, a
  // start-up recovery that could not revert it) is reverted through its agent.
  core::Status revertNow(int64_t journal_id) override;
  bool ownedByRunningRun(int64_t run_id) override;

  // True when a run holds a fault on the fabric and its thread has shown no progress (a wait
  // slice, an agent call returning) for stale_ms: it is wedged, and so are its faults. serve
  // renews its guardian's lease only while this is false (app/lease_heartbeat.h).
  bool holdsFaultsWithoutProgress(int64_t stale_ms);

  // Any running run; nullopt for queued and finished ones.
  std::optional<LiveStatus> live(int64_t run_id);

 private:
  struct Slot {
    std::unique_ptr<RunExecution> execution;
    std::thread thread;
    int port = 0;
    bool done = false;  // the thread has released everything and is about to return
  };

  void dispatchLoop();
  // Under mu_: creates the run's execution and thread.
  void launch(int64_t run_id);
  int pickPort(int64_t run_id) const;  // under mu_
  std::set<std::string> targetsOf(int64_t run_id);
  void recordWaits(const std::map<int64_t, WaitReason>& changed);
  void runThread(int64_t run_id);

  EngineDeps deps_;
  EngineOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<int64_t> pending_;  // submitted, targets not yet computed
  TargetLocks locks_;
  std::map<int64_t, WaitReason> last_waits_;  // what recordWaits last stored, per queued run
  std::map<int64_t, Slot> running_;
  bool dirty_ = false;  // something changed that may let a queued run start
  bool stopping_ = false;
  bool started_ = false;
  std::thread dispatcher_;
};

}  // namespace fabric_chaos::scenarios
