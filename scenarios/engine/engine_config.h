#pragma once
// What the engine and each run execution are built from, and what a watcher sees of a run.

#include <cstdint>
#include <string>

#include "core/clock.h"
#include "scenarios/engine/agent_directory.h"
#include "scenarios/engine/slurm_submitter.h"
#include "scenarios/services.h"
#include "store/store.h"

namespace fabric_chaos::scenarios {

struct EngineDeps {
  store::Store* store = nullptr;
  AgentDirectory* agents = nullptr;
  FabricCatalog* fabrics = nullptr;
  core::Clock* clock = nullptr;
  SwitchTelemetry* switch_telemetry = nullptr;  // null: runs record no switch telemetry
  // Starts workloads whose launcher is "slurm" (scenarios/engine/slurm_workload.h); null: this
  // controller launches no commands (serve without --allow-exec), and such a run fails saying so.
  SlurmSubmitter* slurm = nullptr;
};

struct EngineOptions {
  int64_t ready_timeout_ms = 20000;  // all ranks must form the ring within this
  int base_port = 17000;             // rank port = base_port + run_id % 1000, or the next free one
  int stop_grace_ms = 3000;          // ranks get SIGTERM, then SIGKILL after this
  // After a rank dies, how long the other ranks may go on exiting by themselves before they are
  // stopped: a job's ranks usually fail together, and the rank that exits first is often a victim
  // ("connection closed by peer") of the one whose error explains the death ("timed out").
  int rank_death_settle_ms = 2000;
  int max_parallel_runs = 4;  // runs on disjoint targets executing at once
  // After a run ends, how long failed reverts are retried (with back-off) before the run ends in
  // error with fault_left. Start-up recovery and POST /v1/faults/{id}/revert can retry later.
  int64_t revert_retry_budget_ms = 10000;
  // fabric-chaos on the Slurm nodes when the fabric's "slurm" names no binary: this one's path,
  // the same on every node of the namespace lab.
  std::string self_exe = {};
  // Remote agents get an instant's faults and planned reverts ahead of it and act by their own
  // clocks (FaultTimeline) when more than this many of them act at that instant; fewer are called
  // at the instant. -1: more than one wave of concurrent calls (65). Below that the fan-out's own
  // spread is tens of ms, and handing faults out ahead would only put the agents' work (capture,
  // journal) into the last moments of the baseline, which a small host such as a 1-vCPU lab guest
  // shows in its iteration times.
  int schedule_above_agents = -1;
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

}  // namespace fabric_chaos::scenarios
