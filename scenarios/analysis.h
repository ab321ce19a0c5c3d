#pragma once
// Turns per-iteration samples into recovery metrics and the 0-100 resilience score defined in
// docs/scoring.md. Pure functions over plain data: table-tested on synthetic series.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/sample.h"
#include "core/telemetry.h"
#include "scenarios/congestion.h"
#include "scenarios/model.h"
#include "scenarios/subnet_recovery.h"

namespace fabric_chaos::scenarios {

// nccl-tests definitions. algbw = bytes / time; busbw = algbw * 2(n-1)/n for allreduce. GB/s.
double algBandwidthGBps(int64_t bytes, double duration_ms);
double busBandwidthGBps(int64_t bytes, double duration_ms, int world_size);

// What an iteration's rate is measured in. A workload that reports no bytes (an external job
// whose steps carry only times, docs/workloads.md) is measured in steps per second, and every
// figure named busbw then holds that rate: retained, recovery and the score are ratios to the
// baseline, so they mean the same in either unit (docs/scoring.md).
enum class RateUnit { kBusBandwidthGBps, kStepsPerSecond };
std::string_view rateUnitName(RateUnit unit);  // "busbw_gbps", "steps_per_s"
// busBandwidthGBps when bytes > 0, else steps per second (1000 / duration_ms).
double iterationRate(int64_t bytes, double duration_ms, int world_size);

// When a fault step was really in force (from the applied / reverted events, not the plan).
struct FaultWindow {
  int step = 0;
  double start_ms = 0;
  double end_ms = 0;
};

struct AnalysisParams {
  int world_size = 2;
  double baseline_start_ms = 0;
  double baseline_end_ms = 0;
  double observe_end_ms = 0;  // end of the recovery window: nothing after it counts
  double tolerance = 0.10;
  int recovered_after = 5;
};

// Iteration times of one rank over a window, in ms (nearest-rank percentiles).
struct IterationTimes {
  int iterations = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  double p999_ms = 0;
};

struct StepMetrics {
  int step = 0;
  double fault_start_ms = 0;
  double fault_end_ms = 0;
  double baseline_busbw_gbps = 0;
  double worst_busbw_gbps = 0;
  double retained = 1;  // time-weighted busbw during the fault / baseline, in [0, 1]
  std::optional<double> time_to_detect_ms;   // fault start -> first iteration overdue
  std::optional<double> time_to_recover_ms;  // fault end -> start of K good iterations
  double longest_stall_ms = 0;               // longest span without a completed iteration
  // fault start -> the end of the first iteration completed after it (inside the observed span):
  // how long the job went without progress once the fault hit. Beside a PFC watchdog's detection
  // (paused_queues), what its action gave the workload back and when.
  std::optional<double> time_to_first_progress_ms;
  IterationTimes baseline_iteration;  // the baseline window's
  IterationTimes fault_iteration;     // iterations in force during the fault (any overlap)
  // fault p99 / baseline p99; nullopt when no iteration overlapped the fault or none was in the
  // baseline.
  std::optional<double> p99_slowdown;
  // The switch queue that suffered most during the fault, from the run's telemetry; nullopt on a
  // fabric without modelled ports (see attachCongestion).
  std::optional<QueueCongestion> hottest_queue;
  // The switch queues PFC paused during the fault window, most paused first (PFC-honouring labs).
  std::vector<PausedQueue> paused_queues;
  // A traffic fault's aggressors (incast): their goodput and fairness; nullopt for other kinds.
  std::optional<TrafficShare> aggressors;
  // On an InfiniBand run, what its probes saw of the subnet's management (JSON "subnet").
  std::optional<SubnetRecovery> subnet;
  bool survived = true;
  bool recovered = false;
  double score = 100;
};

struct RunAnalysis {
  RateUnit rate_unit = RateUnit::kBusBandwidthGBps;  // of every busbw figure below
  double baseline_busbw_gbps = 0;
  int baseline_iterations = 0;
  std::vector<StepMetrics> steps;
  double score = 0;  // minimum step score; 100 with no steps and a clean run
  std::string note;  // why the analysis could not be completed, if so
};

// `samples` may hold several ranks; each rank is analysed and the worst rank's figures are kept
// per step. `survived` is false when a rank exited with an error.
RunAnalysis analyzeRun(const std::vector<core::Sample>& samples,
                       const std::vector<FaultWindow>& faults, const AnalysisParams& params,
                       bool survived);

// What the fabric showed beside the samples: its switch telemetry, and per step the observation
// of a traffic fault taken before its revert (the fault_reverted event's "observed").
struct FabricObservations {
  std::vector<core::TelemetryPoint> telemetry;
  std::map<int, nlohmann::json> traffic_by_step;
  // An InfiniBand run: its probes' events, in time order, and the end of the observation.
  bool subnet_probed = false;
  std::vector<SubnetEvent> subnet_events;
  double observe_end_ms = 0;
};

// Sets each step's hottest_queue (telemetry over the step's fault window), aggressors and, on an
// InfiniBand run, subnet (probe events from the step's start to the next step's or the end).
void attachObservations(RunAnalysis& analysis, const FabricObservations& observations);

struct GateVerdict {
  std::string gate;  // "min_score"
  bool passed = true;
  std::string detail;  // "score 42.0 < 60"
};

std::vector<GateVerdict> checkGates(const Gates& gates, const RunAnalysis& analysis);
bool allPassed(const std::vector<GateVerdict>& verdicts);

nlohmann::json toJson(const IterationTimes& times);  // {"iterations", "p50", "p99", "p999"}
nlohmann::json toJson(const StepMetrics& metrics);
nlohmann::json toJson(const RunAnalysis& analysis);
nlohmann::json toJson(const std::vector<GateVerdict>& verdicts);

}  // namespace fabric_chaos::scenarios
