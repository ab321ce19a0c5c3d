#pragma once
// One run from start to stored verdict, as a state machine: preparing (plan, ranks, workload,
// ring) -> baseline -> injecting (the fault timeline) -> recovering -> analysing -> passed or
// failed. Its stop conditions (a rank dying, max_duration_ms, busbw below a fraction of the
// baseline) and an abort end it early as aborted, after reverting every fault at once; a fault
// that cannot be taken back ends it in error with fault_left, whatever it measured.
// execute() runs on the run's own thread. The dispatcher, abort() and live() reach an execution
// from other threads and touch only atomics and state guarded by its own mutex; the
// WorkloadListener callbacks come from the agents' reader threads.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/agent.h"
#include "core/run_state.h"
#include "core/status.h"
#include "scenarios/engine/engine_config.h"
#include "scenarios/engine/fault_timeline.h"
#include "scenarios/engine/rank_plan.h"
#include "scenarios/engine/run_recorder.h"
#include "scenarios/engine/run_result.h"
#include "scenarios/engine/stop_conditions.h"
#include "scenarios/engine/telemetry_sampler.h"
#include "scenarios/model.h"
#include "scenarios/plan.h"

namespace fabric_chaos::scenarios {

class RunExecution : public agent::WorkloadListener {
 public:
  RunExecution(const EngineDeps& deps, const EngineOptions& options, int64_t run_id, int port);

  // Runs the run to its final state and stores it. A run already final (aborted while queued)
  // is left as it is.
  void execute();

  // The first request wins; later ones (a rank dying during an abort) change nothing.
  void requestStop(StopRequest request);
  void requestAbort(const std::string& detail, const std::string& error);

  LiveStatus live();
  // True from the moment the final state is decided, before it reaches the store: an abort that
  // arrives after that has nothing left to stop.
  bool finished();
  // True when the run holds a fault and its thread has shown no sign of life for stale_ns
  // (app/lease_heartbeat.h).
  bool stalled(int64_t now_ns, int64_t stale_ns) const;

  // WorkloadListener: called from the agents' reader threads.
  void onSamples(const std::vector<core::Sample>& samples) override;
  void onEvent(int rank, double t_ms, const std::string& kind,
               const nlohmann::json& detail) override;
  void onRankExit(int rank, int exit_code) override;

 private:
  static constexpr int64_t kMaxSleepSliceMs = 50;
  static constexpr double kLateApplyEventMs = 250;

  store::Store& store() { return *deps_.store; }
  int64_t now() { return deps_.clock->nowNs(); }
  double msAt(int64_t t_ns) const { return static_cast<double>(t_ns - origin_ns_) / 1e6; }
  double msSinceOrigin() { return msAt(now()); }
  int64_t nsAt(double ms) const { return origin_ns_ + static_cast<int64_t>(ms * 1e6); }
  void progressed() { progress_ns_ = now(); }

  // The states, in order; a non-OK status ends the run in error.
  core::Status run(const store::RunRecord& record);
  core::Status recordBackends(const std::vector<PlannedAction>& plan);
  // Every rank ready (its ring formed, or an external rank's first step) within timeout_ms.
  core::Status waitForRing(int64_t timeout_ms);
  // The agents of the fabric hosts whose RDMA counters the run samples (rdmaTelemetryHosts).
  std::vector<RdmaTelemetryHost> rdmaTelemetryAgents();
  // The ranks through their agents, or as one Slurm job step (workload.launcher).
  core::Result<std::unique_ptr<agent::WorkloadHandle>> startWorkload(
      const Scenario& scenario, const std::vector<PlannedRank>& ranks);
  std::string slurmJobName() const;  // unique per run: scancel finds the step by it
  core::Status armBusbwCondition(const Scenario& scenario, double baseline_start,
                                 double baseline_end);
  core::Status runFaultTimeline(const std::vector<PlannedAction>& plan, double baseline_end);
  core::Status analyse(const Scenario& scenario, double baseline_start, double baseline_end,
                       double observe_end);
  // When the first fault instant's deliveries must start (run-clock ms): its instant, less the lead
  // its scheduling agents need; baseline_end when the plan applies nothing.
  double firstDeliveryMs(const std::vector<PlannedAction>& plan, double baseline_end) const;
  double lastRevertMs(double fallback) const;
  // The run's switch telemetry, traffic faults' observations and, on an InfiniBand fabric, its
  // probes' events as stored so far, up to observe_end; what cannot be read is left out (and
  // logged).
  FabricObservations storedObservations(double observe_end);

  // Stop conditions.
  // Checks the time-based ones (max duration, low busbw) and returns the next instant one of them
  // could become true.
  int64_t checkTimedConditions();
  // Sleeps until origin-relative `deadline_ms`; false when a stop condition or an abort ended it.
  bool waitUntilMs(double deadline_ms);
  // From the first fault apply to the end of the recovery window.
  void startWatching();
  void stopWatching();
  bool survived();

  // Recording.
  void setState(core::RunState state);
  void event(const std::string& kind, nlohmann::json detail);
  void finish(core::RunState state, std::optional<double> score, const std::string& error);
  std::string recordFaultsLeft(const std::vector<LeftFault>& left, const std::string& error);
  std::string recordStop(int reverted, double reverted_ms);
  // After a rank death stopped the run: waits up to rank_death_settle_ms for the other ranks to
  // exit by themselves, and adds what they said to the stop's error.
  void settleRankDeaths();
  AnalysisParams analysisParams(double baseline_start, double baseline_end,
                                double observe_end) const;

  const EngineDeps deps_;
  const EngineOptions options_;
  const int64_t run_id_;
  const int port_;
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> stopping_workload_{false};
  const int64_t origin_ns_;                       // run clock: samples and events are ms from here
  std::atomic<int64_t> progress_ns_{origin_ns_};  // last sign of life of the run thread
  // Run thread only: from the scenario.
  int64_t max_duration_ms_ = kMaxTimeMs;
  double tolerance_ = 0.1;
  int recovered_after_ = 5;
  std::unique_ptr<agent::WorkloadHandle> workload_;
  Fabric fabric_;  // the fabric as resolved when the run started
  nlohmann::json result_ = nlohmann::json::object();
  RunRecorder recorder_;    // events and journal marks, written off the run thread
  FaultTimeline timeline_;  // run thread only, but for activeCount()
  // The fabric's switch telemetry, from the baseline to the end of the run. Run thread only.
  std::unique_ptr<TelemetrySampler> telemetry_;
  // analyse()'s verdict: state and score. Run thread only.
  std::optional<std::pair<core::RunState, std::optional<double>>> verdict_;
  std::optional<std::pair<double, double>> baseline_;  // run thread only

  std::mutex mu_;  // guards what listener threads and live() share with the run thread
  std::condition_variable ready_cv_;
  core::RunState state_ = core::RunState::kQueued;
  int world_ = 2;
  int ready_ranks_ = 0;
  bool rank_died_ = false;
  // Every rank_error event, described, in arrival order (mu_): the first is said in the run's
  // error, the others join it when a rank death stopped the run (settleRankDeaths).
  std::vector<std::string> rank_errors_;
  int exited_ranks_ = 0;
  int64_t sample_count_ = 0;
  double last_busbw_ = 0;
  std::optional<StopRequest> stop_;
  bool watching_ = false;  // stop conditions are watched
  bool on_rank_death_ = true;
  double busbw_fraction_ = 0;
  int64_t busbw_for_ms_ = 0;
  std::optional<double> busbw_threshold_;
  std::optional<LowBusbwWatch> busbw_watch_;
};

}  // namespace fabric_chaos::scenarios
