#include "scenarios/analysis.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>

namespace fabric_chaos::scenarios {
namespace {

// One completed collective of one rank, with the derived figures every metric needs.
struct Iteration {
  double start = 0;
  double end = 0;
  double duration = 0;
  int64_t bytes = 0;
  double busbw = 0;
};

// What one rank's baseline window says "normal" looks like.
struct Baseline {
  double busbw = 0;   // median busbw of the baseline iterations
  double period = 0;  // median start-to-start spacing, compute gaps included
  int iterations = 0;
  IterationTimes times;
};

// A duration exactly at the threshold must count as good despite rounding in bytes / duration.
constexpr double kGoodSlack = 1e-9;

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

std::string format(const char* fmt, ...) {
  char buffer[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buffer, sizeof(buffer), fmt, args);
  va_end(args);
  return buffer;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  if (values.size() % 2 == 1) return values[mid];
  return (values[mid - 1] + values[mid]) / 2;
}

// Nearest rank: the smallest value with at least p of the values at or below it.
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

IterationTimes iterationTimes(std::vector<double> durations) {
  IterationTimes times;
  times.iterations = static_cast<int>(durations.size());
  std::sort(durations.begin(), durations.end());
  times.p50_ms = percentile(durations, 0.50);
  times.p99_ms = percentile(durations, 0.99);
  times.p999_ms = percentile(durations, 0.999);
  return times;
}

double busFactor(int world_size) {
  if (world_size < 1) return 0;
  return 2.0 * (world_size - 1) / world_size;
}

Baseline measureBaseline(const std::vector<Iteration>& its, const AnalysisParams& params) {
  std::vector<const Iteration*> inside;
  for (const Iteration& it : its) {
    if (it.start >= params.baseline_start_ms && it.end <= params.baseline_end_ms) {
      inside.push_back(&it);
    }
  }
  Baseline baseline;
  baseline.iterations = static_cast<int>(inside.size());
  if (inside.empty()) return baseline;
  std::vector<double> busbw;
  std::vector<double> durations;
  std::vector<double> gaps;
  for (size_t i = 0; i < inside.size(); ++i) {
    busbw.push_back(inside[i]->busbw);
    durations.push_back(inside[i]->duration);
    if (i + 1 < inside.size()) gaps.push_back(inside[i + 1]->start - inside[i]->start);
  }
  baseline.busbw = median(busbw);
  baseline.times = iterationTimes(durations);
  // With a single baseline iteration (or starts that coincide) there is no spacing to measure: the
  // duration is the best, optimistic, estimate of the period.
  baseline.period = gaps.empty() ? 0 : median(gaps);
  if (!(baseline.period > 0)) baseline.period = median(durations);
  return baseline;
}

double overlap(double a_start, double a_end, double b_start, double b_end) {
  return std::max(0.0, std::min(a_end, b_end) - std::max(a_start, b_start));
}

StepMetrics analyzeStep(const std::vector<Iteration>& its, const Baseline& baseline,
                        const FaultWindow& fault, const AnalysisParams& params, bool survived) {
  const double fs = fault.start_ms;
  const double fe = fault.end_ms;
  const double r_end = params.observe_end_ms;
  const double threshold = (1.0 - params.tolerance) * baseline.busbw;
  const double factor = busFactor(params.world_size);
  const size_t k = static_cast<size_t>(std::max(1, params.recovered_after));
  auto good = [&](const Iteration& it) { return it.busbw >= threshold * (1.0 - kGoodSlack); };

  StepMetrics m;
  m.step = fault.step;
  m.fault_start_ms = fs;
  m.fault_end_ms = fe;
  m.baseline_busbw_gbps = baseline.busbw;

  // Detection: the first bad iteration in force during the fault became "overdue" once it had run
  // longer than a good iteration of its size may take.
  for (const Iteration& it : its) {
    if (it.start < fe && it.end > fs && !good(it)) {
      const double d_thr =
          threshold > 0 ? static_cast<double>(it.bytes) * factor / (1e6 * threshold) : 0;
      m.time_to_detect_ms = std::max(0.0, it.start + d_thr - fs);
      break;
    }
  }

  // Recovery: the first run of K good iterations after the revert, all inside the window.
  std::vector<const Iteration*> after;
  for (const Iteration& it : its) {
    if (it.end > fe) after.push_back(&it);
  }
  std::optional<double> recovered_at;
  for (size_t j = 0; j + k <= after.size(); ++j) {
    bool run_ok = true;
    for (size_t i = j; i < j + k && run_ok; ++i) {
      run_ok = good(*after[i]) && after[i]->end <= r_end;
    }
    if (run_ok) {
      recovered_at = std::max(fe, after[j]->start);
      break;
    }
  }
  m.recovered = recovered_at.has_value();
  if (recovered_at) m.time_to_recover_ms = *recovered_at - fe;
  const double s_end = recovered_at.value_or(r_end);

  // Worst busbw while the fault or its after-effects lasted; no iteration at all means no progress.
  double worst = std::numeric_limits<double>::infinity();
  for (const Iteration& it : its) {
    if (it.start <= s_end && it.end >= fs) worst = std::min(worst, it.busbw);
  }
  m.worst_busbw_gbps = std::isinf(worst) ? 0 : worst;

  // Retained: iterations (fractional at the edges) done during the fault, against how many the
  // baseline pace would have done.
  if (fe <= fs) {
    m.retained = 1;
  } else if (baseline.period <= 0) {
    m.retained = 0;
  } else {
    double progress = 0;
    for (const Iteration& it : its) {
      if (it.duration > 0) progress += overlap(it.start, it.end, fs, fe) / it.duration;
    }
    const double expected = (fe - fs) / baseline.period;
    m.retained = std::clamp(progress / expected, 0.0, 1.0);
  }

  for (const Iteration& it : its) {
    if (it.end > fs && it.end <= r_end &&
        (!m.time_to_first_progress_ms || it.end - fs < *m.time_to_first_progress_ms)) {
      m.time_to_first_progress_ms = it.end - fs;
    }
  }

  // Longest stall: the widest gap between completions, the fault start and the end of the
  // observed span acting as completions.
  if (s_end > fs) {
    std::vector<double> points{fs};
    for (const Iteration& it : its) {
      if (it.end > fs && it.end < s_end) points.push_back(it.end);
    }
    points.push_back(s_end);
    std::sort(points.begin(), points.end());
    for (size_t i = 1; i < points.size(); ++i) {
      m.longest_stall_ms = std::max(m.longest_stall_ms, points[i] - points[i - 1]);
    }
  }

  // Iteration times during the fault, against the baseline's: what a hot spot that slows the
  // ring without stopping it does to the tail.
  m.baseline_iteration = baseline.times;
  std::vector<double> during;
  for (const Iteration& it : its) {
    if (it.start < fe && it.end > fs) during.push_back(it.duration);
  }
  m.fault_iteration = iterationTimes(std::move(during));
  if (m.fault_iteration.iterations > 0 && baseline.times.p99_ms > 0) {
    m.p99_slowdown = m.fault_iteration.p99_ms / baseline.times.p99_ms;
  }

  m.survived = survived && std::any_of(its.begin(), its.end(),
                                       [&](const Iteration& it) { return it.end > fe; });

  if (!m.survived) {
    m.score = 0;
  } else {
    double f = 0;
    if (m.recovered && r_end > fe) f = std::max(0.0, 1.0 - *m.time_to_recover_ms / (r_end - fe));
    m.score = std::clamp(100.0 * (0.5 * m.retained + 0.5 * f), 0.0, 100.0);
  }
  return m;
}

// Steps of a run whose baseline could not be measured: listed so the report shows them, scored 0
// so that no gate passes on a number that was never measured.
StepMetrics unmeasuredStep(const FaultWindow& fault, bool survived) {
  StepMetrics m;
  m.step = fault.step;
  m.fault_start_ms = fault.start_ms;
  m.fault_end_ms = fault.end_ms;
  m.retained = 0;
  m.survived = survived;
  m.recovered = false;
  m.score = 0;
  return m;
}

std::string fmtMs(double ms) { return format("%.1f ms", ms); }

}  // namespace

double algBandwidthGBps(int64_t bytes, double duration_ms) {
  if (!(duration_ms > 0)) return 0;  // also catches NaN
  // bytes / (ms / 1e3) / 1e9 = bytes / ms / 1e6
  return static_cast<double>(bytes) / duration_ms / 1e6;
}

double busBandwidthGBps(int64_t bytes, double duration_ms, int world_size) {
  return algBandwidthGBps(bytes, duration_ms) * busFactor(world_size);
}

std::string_view rateUnitName(RateUnit unit) {
  return unit == RateUnit::kStepsPerSecond ? "steps_per_s" : "busbw_gbps";
}

double iterationRate(int64_t bytes, double duration_ms, int world_size) {
  if (bytes > 0) return busBandwidthGBps(bytes, duration_ms, world_size);
  return duration_ms > 0 ? 1000.0 / duration_ms : 0;
}

RunAnalysis analyzeRun(const std::vector<core::Sample>& samples,
                       const std::vector<FaultWindow>& faults, const AnalysisParams& params,
                       bool survived) {
  std::map<int, std::vector<Iteration>> by_rank;
  for (const core::Sample& s : samples) {
    Iteration it;
    it.start = s.start_ms;
    it.duration = s.duration_ms;
    it.end = s.start_ms + s.duration_ms;
    it.bytes = s.bytes;
    it.busbw = iterationRate(s.bytes, s.duration_ms, params.world_size);
    by_rank[s.rank].push_back(it);
  }
  RunAnalysis run;
  // One unit per run: a workload either reports bytes or it does not.
  if (!samples.empty() && samples.front().bytes <= 0) run.rate_unit = RateUnit::kStepsPerSecond;
  for (auto& [rank, its] : by_rank) {
    std::stable_sort(its.begin(), its.end(),
                     [](const Iteration& a, const Iteration& b) { return a.start < b.start; });
  }

  std::map<int, Baseline> baselines;
  std::vector<double> pooled;
  for (const auto& [rank, its] : by_rank) {
    baselines[rank] = measureBaseline(its, params);
    for (const Iteration& it : its) {
      if (it.start >= params.baseline_start_ms && it.end <= params.baseline_end_ms) {
        pooled.push_back(it.busbw);
      }
    }
  }
  run.baseline_iterations = static_cast<int>(pooled.size());
  run.baseline_busbw_gbps = median(pooled);

  const std::string window =
      format("[%.1f, %.1f] ms", params.baseline_start_ms, params.baseline_end_ms);
  if (by_rank.empty()) {
    run.note = "no iterations were recorded, so there is no baseline to score against";
  } else {
    for (const auto& [rank, baseline] : baselines) {
      if (baseline.iterations == 0) {
        run.note = format("rank %d has no iteration inside the baseline window ", rank) + window +
                   ", so there is no baseline to score against";
        break;
      }
      if (!(baseline.busbw > 0)) {
        run.note = format("rank %d has a baseline busbw of 0 GB/s in ", rank) + window +
                   ", so there is no baseline to score against";
        break;
      }
    }
  }
  if (!run.note.empty()) {
    for (const FaultWindow& fault : faults) run.steps.push_back(unmeasuredStep(fault, survived));
    run.score = 0;
    return run;
  }

  for (const FaultWindow& fault : faults) {
    std::optional<StepMetrics> worst;
    for (const auto& [rank, its] : by_rank) {  // ascending rank: ties keep the lowest rank
      StepMetrics m = analyzeStep(its, baselines[rank], fault, params, survived);
      if (!worst || m.score < worst->score) worst = m;
    }
    run.steps.push_back(*worst);
  }

  if (run.steps.empty()) {
    run.score = survived ? 100 : 0;
  } else {
    run.score = 100;
    for (const StepMetrics& m : run.steps) run.score = std::min(run.score, m.score);
  }
  return run;
}

namespace {
nlohmann::json pausedQueuesJson(const std::vector<PausedQueue>& queues) {
  nlohmann::json out = nlohmann::json::array();
  for (const PausedQueue& q : queues) out.push_back(toJson(q));
  return out;
}
}  // namespace

void attachObservations(RunAnalysis& analysis, const FabricObservations& observations) {
  for (size_t i = 0; i < analysis.steps.size(); ++i) {
    StepMetrics& m = analysis.steps[i];
    if (observations.subnet_probed) {
      double until = observations.observe_end_ms;
      for (const StepMetrics& later : analysis.steps) {
        if (later.fault_start_ms > m.fault_start_ms) until = std::min(until, later.fault_start_ms);
      }
      m.subnet = subnetRecovery(observations.subnet_events, m.fault_start_ms, m.fault_end_ms,
                                std::max(until, m.fault_end_ms));
    }
    if (!observations.telemetry.empty()) {
      m.hottest_queue = hottestQueue(observations.telemetry, m.fault_start_ms, m.fault_end_ms);
      m.paused_queues = pausedQueues(observations.telemetry, m.fault_start_ms, m.fault_end_ms);
    }
    if (auto it = observations.traffic_by_step.find(m.step);
        it != observations.traffic_by_step.end()) {
      m.aggressors = trafficShare(it->second);
    }
  }
}

namespace {

// A gate every step must pass: failureOf says why one step fails ("" when it passes). The verdict
// lists every failing step; when none fails it says there was nothing to check, or what all of
// them passed with (passed() sees only passing steps).
GateVerdict perStepGate(const char* name, const RunAnalysis& analysis,
                        const std::function<std::string(const StepMetrics&)>& failureOf,
                        const std::string& nothing_to_check,
                        const std::function<std::string()>& passed) {
  GateVerdict v{name, true, ""};
  std::string failures;
  for (const StepMetrics& m : analysis.steps) {
    const std::string failure = failureOf(m);
    if (failure.empty()) continue;
    v.passed = false;
    failures += (failures.empty() ? "" : "; ") + failure;
  }
  if (!v.passed) {
    v.detail = failures;
  } else if (analysis.steps.empty()) {
    v.detail = nothing_to_check;
  } else {
    v.detail = passed();
  }
  return v;
}

// The largest of f over the steps (0 for none).
double largestOver(const RunAnalysis& analysis,
                   const std::function<double(const StepMetrics&)>& f) {
  double largest = 0;
  for (const StepMetrics& m : analysis.steps) largest = std::max(largest, f(m));
  return largest;
}

}  // namespace

std::vector<GateVerdict> checkGates(const Gates& gates, const RunAnalysis& analysis) {
  std::vector<GateVerdict> verdicts;

  if (gates.min_score) {
    GateVerdict v{"min_score", analysis.score >= *gates.min_score, ""};
    v.detail =
        format("score %.1f %s %.1f", analysis.score, v.passed ? ">=" : "<", *gates.min_score);
    if (!v.passed && !analysis.note.empty()) v.detail += " (" + analysis.note + ")";
    verdicts.push_back(v);
  }

  if (gates.max_recovery_ms) {
    const double limit = *gates.max_recovery_ms;
    verdicts.push_back(perStepGate(
        "max_recovery_ms", analysis,
        [&](const StepMetrics& m) -> std::string {
          if (!m.recovered || !m.time_to_recover_ms) {
            return format("step %d did not recover within the recovery window", m.step);
          }
          if (*m.time_to_recover_ms > limit) {
            return format("step %d recovered in ", m.step) + fmtMs(*m.time_to_recover_ms) + " > " +
                   fmtMs(limit);
          }
          return "";
        },
        "no fault steps to recover from",
        [&] {
          const double slowest = largestOver(
              analysis, [](const StepMetrics& m) { return m.time_to_recover_ms.value_or(0); });
          return format("every step recovered within %s (slowest %s)", fmtMs(limit).c_str(),
                        fmtMs(slowest).c_str());
        }));
  }

  if (gates.min_retained) {
    const double limit = *gates.min_retained;
    verdicts.push_back(perStepGate(
        "min_retained", analysis,
        [&](const StepMetrics& m) -> std::string {
          if (m.retained >= limit) return "";
          return format("step %d retained %.2f < %.2f", m.step, m.retained, limit);
        },
        "no fault steps to measure",
        [&] {
          const double lowest =
              1 - largestOver(analysis, [](const StepMetrics& m) { return 1 - m.retained; });
          return format("every step retained >= %.2f (lowest %.2f)", limit, lowest);
        }));
  }

  if (gates.max_sm_takeover_ms) {
    const double limit = *gates.max_sm_takeover_ms;
    verdicts.push_back(perStepGate(
        "max_sm_takeover_ms", analysis,
        [&](const StepMetrics& m) -> std::string {
          if (!m.subnet) return format("step %d: no IB probe measured the subnet", m.step);
          if (!m.subnet->sa_restored) {
            return format("step %d left the SA unanswered (%s and counting)", m.step,
                          fmtMs(m.subnet->sa_outage_ms).c_str());
          }
          const auto& takeover = m.subnet->time_to_new_master_ms;
          if (takeover && *takeover > limit) {
            return format("step %d: the new master answered after ", m.step) + fmtMs(*takeover) +
                   " > " + fmtMs(limit);
          }
          return "";
        },
        "no fault steps to measure",
        [&] {
          const double slowest = largestOver(analysis, [](const StepMetrics& m) {
            return m.subnet ? m.subnet->time_to_new_master_ms.value_or(0) : 0;
          });
          return format("every new master answered within %s (slowest %s)", fmtMs(limit).c_str(),
                        fmtMs(slowest).c_str());
        }));
  }

  if (gates.max_reroute_ms) {
    const double limit = *gates.max_reroute_ms;
    verdicts.push_back(perStepGate(
        "max_reroute_ms", analysis,
        [&](const StepMetrics& m) -> std::string {
          if (!m.subnet) return format("step %d: no IB probe measured the subnet", m.step);
          if (!m.subnet->routes_restored) {
            return format("step %d left %d channel-adapter pairs unroutable", m.step,
                          m.subnet->unroutable_pairs);
          }
          const auto& reroute = m.subnet->time_to_routable_ms;
          if (reroute && *reroute > limit) {
            return format("step %d: every pair was routable again after ", m.step) +
                   fmtMs(*reroute) + " > " + fmtMs(limit);
          }
          return "";
        },
        "no fault steps to measure",
        [&] {
          const double slowest = largestOver(analysis, [](const StepMetrics& m) {
            return m.subnet ? m.subnet->time_to_routable_ms.value_or(0) : 0;
          });
          return format("every step's routes were whole again within %s (slowest %s)",
                        fmtMs(limit).c_str(), fmtMs(slowest).c_str());
        }));
  }

  if (gates.max_p99_slowdown) {
    const double limit = *gates.max_p99_slowdown;
    verdicts.push_back(perStepGate(
        "max_p99_slowdown", analysis,
        [&](const StepMetrics& m) -> std::string {
          if (!m.p99_slowdown) {
            return format("step %d: no iteration to compare with the baseline", m.step);
          }
          if (*m.p99_slowdown <= limit) return "";
          return format("step %d p99 iteration time %.1f ms = %.2f x baseline > %.2f", m.step,
                        m.fault_iteration.p99_ms, *m.p99_slowdown, limit);
        },
        "no fault steps to measure",
        [&] {
          const double largest = largestOver(
              analysis, [](const StepMetrics& m) { return m.p99_slowdown.value_or(0); });
          return format("every step's p99 iteration time <= %.2f x baseline (largest %.2f)", limit,
                        largest);
        }));
  }

  if (gates.require_survival) {
    verdicts.push_back(perStepGate(
        "require_survival", analysis,
        [](const StepMetrics& m) -> std::string {
          return m.survived ? "" : format("step %d: a rank did not survive the fault", m.step);
        },
        "every rank survived every step", [] { return "every rank survived every step"; }));
  }

  return verdicts;
}

bool allPassed(const std::vector<GateVerdict>& verdicts) {
  return std::all_of(verdicts.begin(), verdicts.end(),
                     [](const GateVerdict& v) { return v.passed; });
}

nlohmann::json toJson(const IterationTimes& times) {
  return nlohmann::json{{"iterations", times.iterations},
                        {"p50", times.p50_ms},
                        {"p99", times.p99_ms},
                        {"p999", times.p999_ms}};
}

nlohmann::json toJson(const StepMetrics& metrics) {
  auto optional = [](const std::optional<double>& value) {
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
  };
  return nlohmann::json{
      {"step", metrics.step},
      {"fault_start_ms", metrics.fault_start_ms},
      {"fault_end_ms", metrics.fault_end_ms},
      {"baseline_busbw_gbps", metrics.baseline_busbw_gbps},
      {"worst_busbw_gbps", metrics.worst_busbw_gbps},
      {"retained", metrics.retained},
      {"time_to_detect_ms", optional(metrics.time_to_detect_ms)},
      {"time_to_recover_ms", optional(metrics.time_to_recover_ms)},
      {"longest_stall_ms", metrics.longest_stall_ms},
      {"time_to_first_progress_ms", optional(metrics.time_to_first_progress_ms)},
      {"baseline_iteration_ms", toJson(metrics.baseline_iteration)},
      {"fault_iteration_ms", toJson(metrics.fault_iteration)},
      {"p99_slowdown", optional(metrics.p99_slowdown)},
      {"hottest_queue", metrics.hottest_queue ? toJson(*metrics.hottest_queue) : nlohmann::json()},
      {"paused_queues", pausedQueuesJson(metrics.paused_queues)},
      {"aggressors", metrics.aggressors ? toJson(*metrics.aggressors) : nlohmann::json()},
      {"subnet", metrics.subnet ? toJson(*metrics.subnet) : nlohmann::json()},
      {"survived", metrics.survived},
      {"recovered", metrics.recovered},
      {"score", metrics.score},
  };
}

nlohmann::json toJson(const RunAnalysis& analysis) {
  nlohmann::json steps = nlohmann::json::array();
  for (const StepMetrics& m : analysis.steps) steps.push_back(toJson(m));
  return nlohmann::json{
      {"rate_unit", rateUnitName(analysis.rate_unit)},
      {"baseline_busbw_gbps", analysis.baseline_busbw_gbps},
      {"baseline_iterations", analysis.baseline_iterations},
      {"steps", std::move(steps)},
      {"score", analysis.score},
      {"note", analysis.note},
  };
}

nlohmann::json toJson(const std::vector<GateVerdict>& verdicts) {
  nlohmann::json out = nlohmann::json::array();
  for (const GateVerdict& v : verdicts) {
    out.push_back({{"gate", v.gate}, {"passed", v.passed}, {"detail", v.detail}});
  }
  return out;
}

}  // namespace fabric_chaos::scenarios
