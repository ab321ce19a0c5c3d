#pragma once
// Runs suites (docs/api.md, "Suites"): one worker thread per suite run submits the suite's
// scenarios one after the other through the RunService, waits for each run to finish by polling
// the store, and stores one verdict. Scenario, fabric and submit failures end up in the suite
// run's error, never as exceptions. All public methods are thread-safe; shutdown() joins every
// worker and leaves unfinished suite runs interrupted (their current run is the engine's to stop).

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "core/status.h"
#include "scenarios/schedule/submit.h"
#include "scenarios/services.h"
#include "store/store.h"

namespace fabric_chaos::scenarios::schedule {

// The store, the engine, the fabrics and kinds to validate against, and the default fabric.
using SuiteRunnerDeps = SubmitDeps;

struct SuiteRunnerOptions {
  int64_t poll_interval_ms = 200;  // how often a worker reads its current run's state
};

class SuiteRunner : public SuiteService {
 public:
  SuiteRunner(SuiteRunnerDeps deps, SuiteRunnerOptions options = {});
  ~SuiteRunner() override;  // shutdown()

  // The fabric is the request's, else the suite document's "fabric", else "" (each scenario's
  // own fabric, else the default). kUnavailable after shutdown().
  core::Result<int64_t> submitSuite(const std::string& suite_name, const nlohmann::json& suite,
                                    const std::string& fabric) override;
  // Aborts the current run and skips the rest; the suite run ends aborted. kNotFound for an
  // unknown id, kFailedPrecondition for a finished suite run.
  core::Status abortSuite(int64_t suite_run_id) override;

  // Stops every worker (no further scenario is started), marks their suite runs interrupted and
  // joins them. Idempotent.
  void shutdown();

  // Blocks until no worker is active (for tests and orderly shutdown); false on timeout.
  bool waitIdle(int64_t timeout_ms);

 private:
  struct Worker {
    std::thread thread;
    bool abort_requested = false;
    int64_t current_run = 0;  // 0 = between runs
    bool done = false;
  };

  void work(int64_t id, nlohmann::json suite, std::string fabric);
  // Finishes one scenario of the suite: its final run state, or "error" with *error set when it
  // could not be started. Sets *run_id when a run was submitted.
  std::string runScenario(int64_t id, const std::string& name, const std::string& fabric,
                          int64_t* run_id, std::string* error);
  // Polls the store until the run is final or the worker must stop; "" when it stopped first.
  std::string waitForRun(int64_t id, int64_t run_id, std::string* error);
  bool stopRequested(int64_t id);  // under no lock
  void reapFinished();             // under mu_

  SuiteRunnerDeps deps_;
  SuiteRunnerOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::map<int64_t, Worker> workers_;
};

}  // namespace fabric_chaos::scenarios::schedule
