#pragma once
// The scenario engine: takes queued runs, starts the workload through the agent, records a
// baseline, applies and reverts every planned fault at its scheduled instant (journaled before
// acting), waits out the recovery window, analyses the samples and stores the score and gate
// verdicts. Runs execute one at a time on the engine's worker thread (target locking for parallel
// runs comes with the scheduler). submit() and abort() may be called from any thread; a fault is
// never left applied when a run ends, is aborted or fails.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "agent/agent.h"
#include "core/clock.h"
#include "scenarios/engine/agent_directory.h"
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
  int base_port = 17000;             // rank port = base_port + run_id % 1000
  int stop_grace_ms = 3000;          // ranks get SIGTERM, then SIGKILL after this
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

class Engine : public RunService {
 public:
  Engine(EngineDeps deps, EngineOptions options);
  ~Engine() override;

  // Reverts every fault the journal does not mark reverted and marks runs left unfinished by a
  // previous process as interrupted. Call before start().
  core::Result<StartupRecovery> recoverAtStartup();
  void start();
  // Aborts the current run (reverting its faults), fails queued ones as aborted, joins the worker.
  void shutdown();

  core::Result<int64_t> submit(const Scenario& scenario, const std::string& fabric) override;
  core::Status abort(int64_t run_id) override;

  std::optional<LiveStatus> live(int64_t run_id);

 private:
  class RunExecution;

  void workerLoop();

  EngineDeps deps_;
  EngineOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<int64_t> queue_;
  bool stopping_ = false;
  RunExecution* current_ = nullptr;  // guarded by mu_
  std::thread worker_;
};

}  // namespace fabric_chaos::scenarios
