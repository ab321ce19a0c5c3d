#pragma once
// The scenario engine: takes queued runs, starts the workload through the agent, records a
// baseline, applies and reverts every planned fault at its scheduled instant (journaled before
// acting), waits out the recovery window, analyses the samples and stores the score and gate
// verdicts. A dispatcher thread starts queued runs whose targets are free (TargetLocks), each on
// its own thread, at most max_parallel_runs at once. A run's stop conditions (and abort()) revert
// every fault at once and end it as aborted. Every public method may be called from any thread; a
// fault is never left applied when a run ends, is aborted or fails.

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

#include "agent/agent.h"
#include "core/clock.h"
#include "scenarios/engine/agent_directory.h"
#include "scenarios/engine/target_locks.h"
#include "scenarios/services.h"
#include "server/store/store.h"

namespace fabric_chaos::scenarios {

struct EngineDeps {
  store::Store* store = nullptr;
  AgentDirectory* agents = nullptr;
  FabricCatalog* fabrics = nullptr;
  core::Clock* clock = nullptr;
};

struct EngineOptions {
  int64_t ready_timeout_ms = 20000;  // all ranks must form the ring within this
  int base_port = 17000;             // rank port = base_port + run_id % 1000, or the next free one
  int stop_grace_ms = 3000;          // ranks get SIGTERM, then SIGKILL after this
  int max_parallel_runs = 4;         // runs on disjoint targets executing at once
  // After a run ends, how long failed reverts are retried (with back-off) before the run ends in
  // error with fault_left. Start-up recovery and POST /v1/faults/{id}/revert can retry later.
  int64_t revert_retry_budget_ms = 10000;
};

// What a watcher sees while a run is in progress.
struct LiveStatus {
  int64_t run_id = 0;
  std::string state;
  double elapsed_ms = 0;       // since the workload started
  double last_busbw_gbps = 0;  // of the latest sample
  int64_t samples = 0;
  int active_faults = 0;
  int ready_ranks = 0;
};

struct StartupRecovery {
  int reverted = 0;                  // journal entries reverted now
  int failed = 0;                    // entries that could not be reverted (still unreverted)
  std::vector<int64_t> interrupted;  // runs marked interrupted
};

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
  class RunExecution;
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
