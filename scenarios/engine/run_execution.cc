#include "scenarios/engine/run_execution.h"

#include <algorithm>
#include <chrono>

#include "core/log.h"
#include "scenarios/composition.h"
#include "scenarios/engine/fault_schedule.h"
#include "scenarios/engine/rank_plan.h"
#include "scenarios/engine/slurm_workload.h"
#include "scenarios/engine/workload_group.h"

namespace fabric_chaos::scenarios {

using core::RunState;
using core::Status;
using core::StatusCode;
using nlohmann::json;

RunExecution::RunExecution(const EngineDeps& deps, const EngineOptions& options, int64_t run_id,
                           int port)
    : deps_(deps),
      options_(options),
      run_id_(run_id),
      port_(port),
      origin_ns_(deps.clock->nowNs()),
      recorder_(*deps.store),
      timeline_({deps.store, deps.agents, deps.clock, &recorder_, run_id, origin_ns_,
                 [this] { progressed(); }, options.schedule_above_agents},
                Fabric{}) {}

bool RunExecution::stalled(int64_t now_ns, int64_t stale_ns) const {
  return timeline_.activeCount() > 0 && now_ns - progress_ns_.load() > stale_ns;
}

void RunExecution::requestStop(StopRequest request) {
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
    stop_ = std::move(request);
  }
  stop_requested_ = true;
  ready_cv_.notify_all();
  deps_.clock->wake();
}

void RunExecution::requestAbort(const std::string& detail, const std::string& error) {
  requestStop({"abort_request", detail, error, now()});
}

bool RunExecution::finished() {
  std::lock_guard lock(mu_);
  return core::isFinal(state_);
}

LiveStatus RunExecution::live() {
  std::lock_guard lock(mu_);
  LiveStatus s;
  s.run_id = run_id_;
  s.state = std::string(core::runStateName(state_));
  s.elapsed_ms = msSinceOrigin();  // the origin is set when the execution is made
  s.last_busbw_gbps = last_busbw_;
  s.samples = sample_count_;
  s.active_faults = timeline_.activeCount();
  s.ready_ranks = ready_ranks_;
  return s;
}

void RunExecution::execute() {
  auto record = store().getRun(run_id_);
  if (!record.isOk()) {
    core::logError("run " + std::to_string(run_id_) + ": " + record.status().toString());
    return;
  }
  if (core::isFinalRunState(record->state)) return;  // aborted while queued
  Status outcome = run(*record);
  // Every fault comes off before the verdict; a revert that keeps failing is retried for
  // revert_retry_budget_ms and then reported, never hidden behind a passed run.
  const int reverted = timeline_.revertAll(stop_requested_ ? "stop condition" : "run ended",
                                           now() + options_.revert_retry_budget_ms * 1000000);
  const double reverted_ms = msSinceOrigin();
  stopWatching();
  settleRankDeaths();
  stopping_workload_ = true;
  if (workload_) workload_->stop(options_.stop_grace_ms);
  std::string error;
  if (verdict_) {
    // Analysed: the verdict stands, unless a fault is left behind.
  } else if (stop_requested_) {
    error = recordStop(reverted, reverted_ms);
  } else if (!outcome.isOk()) {
    error = outcome.message();
  }
  if (const auto left = timeline_.left(); !left.empty()) {
    finish(RunState::kError, std::nullopt, recordFaultsLeft(left, error));
  } else if (verdict_) {
    finish(verdict_->first, verdict_->second, "");
  } else if (stop_requested_) {
    finish(RunState::kAborted, std::nullopt, error);
  } else {
    finish(RunState::kError, std::nullopt, error);
  }
}

void RunExecution::onSamples(const std::vector<core::Sample>& samples) {
  if (samples.empty()) return;
  if (Status s = store().appendSamples(run_id_, samples); !s.isOk()) {
    core::logError("run " + std::to_string(run_id_) + ": storing samples: " + s.toString());
  }
  std::lock_guard lock(mu_);
  sample_count_ += static_cast<int64_t>(samples.size());
  const auto& last = samples.back();
  last_busbw_ = iterationRate(last.bytes, last.duration_ms, world_);
  if (busbw_watch_) {
    for (const auto& s : samples) {
      busbw_watch_->onIteration(s.start_ms + s.duration_ms,
                                iterationRate(s.bytes, s.duration_ms, world_));
    }
  }
}

namespace {
// "rank 2: the command exited with code 1 (RuntimeError: ... timed out)": a rank_error's message
// and the last line its command wrote on stderr, for the run's error.
std::string describeRankError(int rank, const json& detail) {
  std::string text = "rank " + std::to_string(rank) + ": " +
                     detail.value("message", detail.value("reason", std::string("failed")));
  const json tail = detail.value("stderr_tail", json::array());
  if (tail.is_array() && !tail.empty() && tail.back().is_string()) {
    text += " (" + tail.back().get<std::string>() + ")";
  }
  return text;
}
}  // namespace

void RunExecution::onEvent(int rank, double t_ms, const std::string& kind, const json& detail) {
  json d = detail.is_object() ? detail : json::object();
  d["rank"] = rank;
  recorder_.event({run_id_, t_ms, core::wallNowMs(), kind, d});
  if (kind == "rank_ready") {
    std::lock_guard lock(mu_);
    ++ready_ranks_;
    ready_cv_.notify_all();
  }
  if (kind == "rank_error") {
    std::lock_guard lock(mu_);
    rank_errors_.push_back(describeRankError(rank, d));
  }
}

void RunExecution::onRankExit(int rank, int exit_code) {
  const bool expected = stopping_workload_;
  const int64_t t_ns = now();
  recorder_.event({run_id_,
                   msAt(t_ns),
                   core::wallNowMs(),
                   "rank_exit",
                   {{"rank", rank}, {"exit_code", exit_code}, {"expected", expected}}});
  bool stop = false;
  {
    std::lock_guard lock(mu_);
    ++exited_ranks_;
    // A rank that dies before we stop it did not survive.
    if (!expected) rank_died_ = true;
    stop = !expected && watching_ && on_rank_death_;
  }
  ready_cv_.notify_all();
  if (stop) {
    std::string what = "rank " + std::to_string(rank) + " exited unexpectedly (exit code " +
                       std::to_string(exit_code) + ")";
    {
      std::lock_guard lock(mu_);
      if (!rank_errors_.empty()) what += ": " + rank_errors_.front();
    }
    requestStop({"rank_died", what, "stop condition: " + what, t_ns});
  }
}

Status RunExecution::run(const store::RunRecord& record) {
  auto scenario_result = parseScenario(record.scenario);
  if (!scenario_result.isOk()) return scenario_result.status();
  const Scenario scenario = std::move(scenario_result.value());
  tolerance_ = scenario.tolerance;
  recovered_after_ = scenario.recovered_after;
  max_duration_ms_ = scenario.max_duration_ms;
  {
    std::lock_guard lock(mu_);
    on_rank_death_ = scenario.stop_conditions.on_rank_death;
  }
  // Published so that outside observers (tests, operators' own probes) can line their
  // CLOCK_MONOTONIC readings up with the run's timeline.
  (void)store().setRunAttribute(run_id_, "clock_origin_steady_ns", origin_ns_);
  setState(RunState::kPreparing);

  auto fabric = deps_.fabrics->get(record.fabric);
  if (!fabric.isOk()) return fabric.status();
  auto plan = planFaults(scenario, *fabric);
  if (!plan.isOk()) return plan.status();
  // Validated at submission; checked again because the fabric may have changed since.
  FC_RETURN_IF_ERROR(checkComposition(*plan));
  fabric_ = fabric.value();
  timeline_.setFabric(fabric_);
  // Said with the run: on such a lab a loss percentage counts GSO super-packets (docs/lab.md).
  if (fabric_.segmentation_offloads) {
    (void)store().setRunAttribute(run_id_, "segmentation_offloads", true);
  }
  FC_RETURN_IF_ERROR(recordBackends(*plan));

  // Allowed, but said plainly: failing a subnet's only SM leaves it without a master until the
  // revert, which is a different experiment from a failover.
  if (fabric_.ib && fabric_.ib->subnet_managers.size() <= 1) {
    for (size_t i = 0; i < scenario.steps.size(); ++i) {
      if (scenario.steps[i].kind != "sm_failover") continue;
      event("warning",
            {{"step", static_cast<int>(i)},
             {"message", "step " + std::to_string(i) + ": fabric " + fabric_.name +
                             " has a single subnet manager, so no standby exists: the subnet "
                             "has no master from the fault until its revert"}});
    }
  }
  auto ranks = planRanks(scenario, fabric_, port_);
  if (!ranks.isOk()) return ranks.status();
  {
    std::lock_guard lock(mu_);
    world_ = static_cast<int>(ranks->size());
  }
  if (stop_requested_) return Status::ok();
  auto workload = startWorkload(scenario, *ranks);
  if (!workload.isOk()) return workload.status();
  workload_ = std::move(workload.value());
  if (scenario.workload.kind == WorkloadKind::kRing) {
    event("workload_started", {{"ranks", world_},
                               {"port", port_},
                               {"message_bytes", scenario.workload.message_bytes},
                               {"compute_ms", scenario.workload.compute_ms}});
    FC_RETURN_IF_ERROR(waitForRing(options_.ready_timeout_ms));
  } else {
    // An external job is ready at its first step: interpreter start-up, imports and rendezvous
    // come first, which take far longer than the ring's connections.
    const agent::ExecRankSpec& exec = ranks->front().spec.exec;
    json started = {{"ranks", world_},
                    {"kind", workloadKindName(scenario.workload.kind)},
                    {"command", exec.command},
                    {"master", exec.master_addr + ":" + std::to_string(exec.master_port)},
                    {"launcher", workloadLauncherName(scenario.workload.exec.launcher)}};
    if (scenario.workload.exec.launcher == WorkloadLauncher::kSlurm) {
      started["slurm_job"] = slurmJobName();
    }
    event("workload_started", std::move(started));
    FC_RETURN_IF_ERROR(waitForRing(scenario.workload.exec.start_timeout_ms));
  }
  if (stop_requested_) return Status::ok();
  // Every state the plan will change is captured and journaled now, once, so that no
  // scheduled instant waits for it.
  FC_RETURN_IF_ERROR(timeline_.prepare(*plan));

  telemetry_ = std::make_unique<TelemetrySampler>(
      TelemetrySamplerDeps{
          deps_.store, deps_.switch_telemetry, deps_.clock, run_id_, origin_ns_,
          [this](const std::string& kind, json detail) { event(kind, std::move(detail)); },
          rdmaTelemetryAgents()},
      fabric_);
  telemetry_->start();

  setState(RunState::kBaseline);
  const double baseline_start = msSinceOrigin();
  const double baseline_end = baseline_start + static_cast<double>(scenario.baseline_ms);
  // A first fault handed out ahead of its instant (FaultTimeline::leadMs) goes out before the
  // baseline ends: the analysis still measures the baseline to its end, the stop conditions are
  // armed from what was seen before the delivery.
  const double first_delivery = firstDeliveryMs(*plan, baseline_end);
  if (!waitUntilMs(std::min(baseline_end, first_delivery))) return Status::ok();
  baseline_ = {baseline_start, baseline_end};
  FC_RETURN_IF_ERROR(
      armBusbwCondition(scenario, baseline_start, std::min(baseline_end, msSinceOrigin())));

  setState(RunState::kInjecting);
  FC_RETURN_IF_ERROR(runFaultTimeline(*plan, baseline_end));
  if (stop_requested_) return Status::ok();

  setState(RunState::kRecovering);
  const double last_revert = lastRevertMs(baseline_end);
  const double observe_end = last_revert + static_cast<double>(scenario.recovery_ms);
  if (!waitUntilMs(observe_end)) return Status::ok();

  stopWatching();
  stopping_workload_ = true;  // from here a rank exit is expected, not a death
  workload_->stop(options_.stop_grace_ms);
  event("workload_stopped", json::object());
  telemetry_->stop();  // all of it stored before the analysis reads it

  setState(RunState::kAnalysing);
  return analyse(scenario, baseline_start, baseline_end, observe_end);
}

std::string RunExecution::slurmJobName() const {
  return "fabric-chaos-run-" + std::to_string(run_id_);
}

core::Result<std::unique_ptr<agent::WorkloadHandle>> RunExecution::startWorkload(
    const Scenario& scenario, const std::vector<PlannedRank>& ranks) {
  if (scenario.workload.kind == WorkloadKind::kRing ||
      scenario.workload.exec.launcher == WorkloadLauncher::kAgents) {
    return startWorkloadGroup(*deps_.agents, ranks, origin_ns_, this, options_.stop_grace_ms);
  }
  if (deps_.slurm == nullptr) {
    return Status(StatusCode::kFailedPrecondition,
                  "workload.launcher is \"slurm\", and this server submits no jobs: the ranks "
                  "would run a command as its user on the cluster (serve --allow-exec)");
  }
  if (!fabric_.slurm) {
    return Status(StatusCode::kUnprocessable,
                  "fabric " + fabric_.name + " no longer describes a Slurm cluster");
  }
  SlurmStepPlan plan;
  plan.job_name = slurmJobName();
  plan.program = fabric_.slurm->binary.empty() ? options_.self_exe : fabric_.slurm->binary;
  plan.launch = scenario.workload.exec.slurm;
  return startSlurmWorkload(*deps_.slurm, *fabric_.slurm, plan, ranks, origin_ns_, this);
}

std::vector<RdmaTelemetryHost> RunExecution::rdmaTelemetryAgents() {
  std::vector<RdmaTelemetryHost> out;
  for (const Host& host : rdmaTelemetryHosts(fabric_)) {
    auto agent = deps_.agents->agentFor(AgentRef{host.agent, host.agent_token_file});
    // The run itself reaches its agents through the same directory and reports a failure there.
    if (agent.isOk()) out.push_back({host.name, agent.value()});
  }
  return out;
}

// The busbw threshold is a fraction of the baseline median, computed as the analysis will.
Status RunExecution::armBusbwCondition(const Scenario& scenario, double baseline_start,
                                       double baseline_end) {
  const StopConditions& stop = scenario.stop_conditions;
  if (!stop.min_busbw_fraction) return Status::ok();
  auto samples = store().samples(run_id_);
  if (!samples.isOk()) return samples.status().withContext("reading the baseline samples");
  const AnalysisParams params = analysisParams(baseline_start, baseline_end, baseline_end);
  const double baseline = analyzeRun(*samples, {}, params, true).baseline_busbw_gbps;
  const double threshold = *stop.min_busbw_fraction * baseline;
  {
    std::lock_guard lock(mu_);
    busbw_fraction_ = *stop.min_busbw_fraction;
    busbw_for_ms_ = stop.for_ms;
    busbw_threshold_ = threshold;
  }
  event("stop_condition_armed", {{"condition", "busbw_below"},
                                 {"baseline_busbw_gbps", baseline},
                                 {"threshold_gbps", threshold},
                                 {"for_ms", stop.for_ms}});
  return Status::ok();
}

// Records, per fault kind, the backend of the agent that will apply it, and refuses up front a
// kind that agent cannot apply (e.g. netem on a kernel without sch_netem).
Status RunExecution::recordBackends(const std::vector<PlannedAction>& plan) {
  json backends = json::object();
  for (const auto& action : plan) {
    auto agent = deps_.agents->agentFor(agentForTarget(fabric_, action.target));
    if (!agent.isOk()) return agent.status();
    for (const auto& info : (*agent)->capabilities()) {
      if (info.kind != action.kind) continue;
      if (!info.available) {
        return Status(StatusCode::kNotSupported, "fault kind " + info.kind +
                                                     " is not available on " + action.target.host +
                                                     ": " + info.reason);
      }
      // A fault that names its backend (packet_loss's params.backend) uses that one.
      auto named = action.params.find("backend");
      backends[info.kind] = named != action.params.end() && named->is_string()
                                ? named->get<std::string>()
                                : info.backend;
    }
  }
  (void)store().setRunAttribute(run_id_, "backends", backends);
  if (backends.contains("packet_loss")) {
    (void)store().setRunAttribute(run_id_, "loss_backend", backends["packet_loss"]);
  }
  return Status::ok();
}

Status RunExecution::waitForRing(int64_t timeout_ms) {
  const int64_t ready_deadline = now() + timeout_ms * 1000000;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      if (stop_requested_) return Status::ok();
      if (rank_died_) {
        return Status(StatusCode::kUnavailable,
                      "a workload rank exited before the workload was ready" +
                          (rank_errors_.empty() ? std::string("; see the run's events")
                                                : ": " + rank_errors_.front()));
      }
      if (ready_ranks_ >= world_) return Status::ok();
      if (now() >= ready_deadline) {
        return Status(StatusCode::kTimeout,
                      "the workload was not ready within " + std::to_string(timeout_ms) + " ms (" +
                          std::to_string(ready_ranks_) + " of " + std::to_string(world_) +
                          " ranks ready: a ring rank is ready when its ring formed, an external "
                          "rank at its first step)");
      }
      ready_cv_.wait_for(lock, std::chrono::milliseconds(kMaxSleepSliceMs));
    }
    (void)checkTimedConditions();
  }
}

Status RunExecution::runFaultTimeline(const std::vector<PlannedAction>& plan, double baseline_end) {
  std::vector<FaultInstant> timeline = faultInstants(plan, baseline_end);
  // The actions of one instant (same time, same direction) go out together.
  for (size_t i = 0; i < timeline.size();) {
    const FaultInstant first = timeline[i];
    std::vector<size_t> group;
    for (; i < timeline.size() && timeline[i].at_ms == first.at_ms &&
           timeline[i].apply == first.apply;
         ++i) {
      group.push_back(timeline[i].index);
    }
    // Agents that act on schedule get their faults and reverts ahead of the instant
    // (FaultTimeline).
    const double lead_ms = timeline_.leadMs(group, plan);
    if (!waitUntilMs(first.at_ms - lead_ms)) return Status::ok();
    if (first.apply) {
      startWatching();
      if (stop_requested_) return Status::ok();  // a rank died before the first fault
      FC_RETURN_IF_ERROR(timeline_.apply(group, plan, first.at_ms));
      // A few ms late is every apply; the event is for what a reader of the timeline would notice.
      const double in_force_ms = timeline_.lastInForceMs();
      if (holdForPlannedLength(timeline, i, group, plan, in_force_ms) > 0 &&
          in_force_ms - first.at_ms >= kLateApplyEventMs) {
        event("fault_window_moved",
              {{"late_ms", in_force_ms - first.at_ms},
               {"why",
                "long-running faults came into force late; each holds its planned length "
                "from then"}});
      }
    } else {
      timeline_.revert(group, "scheduled", first.at_ms, false);
    }
  }
  return Status::ok();
}

double RunExecution::firstDeliveryMs(const std::vector<PlannedAction>& plan,
                                     double baseline_end) const {
  const std::vector<FaultInstant> instants = faultInstants(plan, baseline_end);
  std::vector<size_t> group;
  double at_ms = baseline_end;
  for (const FaultInstant& instant : instants) {
    if (!instant.apply) continue;
    if (group.empty()) at_ms = instant.at_ms;
    if (instant.at_ms != at_ms) break;
    group.push_back(instant.index);
  }
  if (group.empty()) return baseline_end;
  return at_ms - timeline_.leadMs(group, plan);
}

double RunExecution::lastRevertMs(double fallback) const {
  double last = fallback;
  for (const auto& [step, window] : timeline_.windows()) last = std::max(last, window.second);
  return last;
}

AnalysisParams RunExecution::analysisParams(double baseline_start, double baseline_end,
                                            double observe_end) const {
  AnalysisParams params;
  params.world_size = world_;
  params.baseline_start_ms = baseline_start;
  params.baseline_end_ms = baseline_end;
  params.observe_end_ms = observe_end;
  params.tolerance = tolerance_;
  params.recovered_after = recovered_after_;
  return params;
}

FabricObservations RunExecution::storedObservations(double observe_end) {
  // They are context for the verdict, not part of it: what cannot be read is logged and the run
  // is still analysed.
  FabricObservations observations;
  auto telemetry = store().telemetry(run_id_);
  if (telemetry.isOk()) {
    observations.telemetry = std::move(telemetry.value());
  } else {
    core::logWarn("run " + std::to_string(run_id_) + ": " + telemetry.status().toString());
  }
  recorder_.flush();  // the fault_reverted events carry the traffic faults' observations
  auto events = store().events(run_id_);
  if (events.isOk()) {
    observations.traffic_by_step = trafficObservations(*events);
    if (fabric_.ib) {
      observations.subnet_probed = true;
      observations.subnet_events = subnetEvents(*events);
      observations.observe_end_ms = observe_end;
    }
  } else {
    core::logWarn("run " + std::to_string(run_id_) + ": " + events.status().toString());
  }
  return observations;
}

Status RunExecution::analyse(const Scenario& scenario, double baseline_start, double baseline_end,
                             double observe_end) {
  auto samples = store().samples(run_id_);
  if (!samples.isOk()) return samples.status();
  MeasuredResult measured =
      measuredResult(*samples, storedObservations(observe_end), faultWindows(timeline_.windows()),
                     analysisParams(baseline_start, baseline_end, observe_end), survived());
  auto verdicts = checkGates(scenario.gates, measured.analysis);
  const bool passed = allPassed(verdicts);
  result_ = std::move(measured.document);
  result_["gates"] = toJson(verdicts);
  result_["passed"] = passed;
  verdict_.emplace(passed ? RunState::kPassed : RunState::kFailed, measured.analysis.score);
  return Status::ok();
}

int64_t RunExecution::checkTimedConditions() {
  const int64_t t = now();
  const int64_t max_deadline = nsAt(static_cast<double>(max_duration_ms_));
  if (t >= max_deadline) {
    const std::string what = "the run exceeded max_duration_ms (" +
                             std::to_string(max_duration_ms_) + " ms since it started)";
    requestStop({"max_duration", what, "stop condition: " + what, max_deadline});
    return t;
  }
  int64_t next = max_deadline;
  std::optional<StopRequest> busbw_stop;
  {
    std::lock_guard lock(mu_);
    if (watching_ && busbw_watch_) {
      const int64_t condition = nsAt(busbw_watch_->conditionMs());
      if (t >= condition) {
        const std::string what = busbwBelowText(busbw_fraction_, busbw_for_ms_);
        busbw_stop = StopRequest{
            "busbw_below",
            what + " (threshold " + std::to_string(busbw_watch_->thresholdGbps()) +
                " GB/s; no iteration at or above it since " +
                std::to_string(static_cast<int64_t>(busbw_watch_->stretchStartMs())) + " ms)",
            "stop condition: " + what, condition};
      } else {
        next = std::min(next, condition);
      }
    }
  }
  if (busbw_stop) {
    requestStop(std::move(*busbw_stop));
    return t;
  }
  return next;
}

// Sleeps in short slices: a wake() racing with the start of a sleep is not lost for more than one
// slice, and a good iteration that moves the busbw deadline is re-read.
bool RunExecution::waitUntilMs(double deadline_ms) {
  const int64_t deadline = nsAt(deadline_ms);
  for (;;) {
    progressed();
    if (stop_requested_) return false;
    const int64_t next_condition = checkTimedConditions();
    if (stop_requested_) return false;
    timeline_.retryDue();
    timeline_.checkHealth(std::min(deadline, next_condition));
    const int64_t t = now();
    if (t >= deadline) return true;
    int64_t wake_at = std::min({deadline, next_condition, t + kMaxSleepSliceMs * int64_t{1000000}});
    if (auto retry = timeline_.nextRetryNs()) wake_at = std::min(wake_at, *retry);
    deps_.clock->sleepUntilNs(wake_at);
  }
}

void RunExecution::startWatching() {
  bool already_dead = false;
  {
    std::lock_guard lock(mu_);
    if (watching_) return;
    watching_ = true;
    if (busbw_threshold_) {
      busbw_watch_.emplace(*busbw_threshold_, static_cast<double>(busbw_for_ms_), msSinceOrigin());
    }
    already_dead = rank_died_ && on_rank_death_;
  }
  // A rank lost during the baseline: injecting into a broken ring would measure nothing.
  if (already_dead) {
    const std::string what = "a rank exited unexpectedly before the first fault";
    requestStop({"rank_died", what, "stop condition: " + what, now()});
  }
}

void RunExecution::stopWatching() {
  std::lock_guard lock(mu_);
  watching_ = false;
}

bool RunExecution::survived() {
  std::lock_guard lock(mu_);
  return !rank_died_;
}

void RunExecution::setState(RunState state) {
  {
    std::lock_guard lock(mu_);
    state_ = state;
  }
  const std::string name(core::runStateName(state));
  recorder_.runState(run_id_, name);
  event("state", {{"state", name}});
}

// Events are written off the run thread (RunRecorder); finish() flushes them first.
void RunExecution::event(const std::string& kind, json detail) {
  recorder_.event({run_id_, msSinceOrigin(), core::wallNowMs(), kind, std::move(detail)});
}

void RunExecution::finish(RunState state, std::optional<double> score, const std::string& error) {
  if (telemetry_) telemetry_->stop();  // before the flush: its errors are events too
  recorder_.flush();                   // a final run has its whole timeline stored
  {
    std::lock_guard lock(mu_);
    state_ = state;
  }
  const std::string name(core::runStateName(state));
  if (Status s = store().finishRun(run_id_, name, score, result_, error); !s.isOk()) {
    core::logError("run " + std::to_string(run_id_) + ": " + s.toString());
  }
  core::logInfo("run " + std::to_string(run_id_) + " " + name +
                (score ? " score " + std::to_string(*score) : "") +
                (error.empty() ? "" : ": " + error));
}

// A run that could not take a fault back ends in error, whatever it measured: the fabric is not
// as it found it. result.fault_left names each one; the journal keeps them for start-up recovery
// and GET /v1/faults lists them. Returns the run's error text.
std::string RunExecution::recordFaultsLeft(const std::vector<LeftFault>& left,
                                           const std::string& error) {
  const json faults = faultLeftJson(left);
  const std::string text = faultLeftText(left);
  result_["passed"] = false;
  result_["fault_left"] = faults;
  if (verdict_) result_["verdict_before_fault_left"] = core::runStateName(verdict_->first);
  event("fault_left", {{"faults", faults}});
  return error.empty() ? text : error + "; " + text;
}

void RunExecution::settleRankDeaths() {
  std::unique_lock lock(mu_);
  if (!stop_ || stop_->reason != "rank_died" || !workload_) return;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.rank_death_settle_ms);
  ready_cv_.wait_until(lock, deadline, [&] { return exited_ranks_ >= world_; });
  if (rank_errors_.size() < 2) return;  // the first is in the stop's error already
  std::string others;
  for (size_t i = 1; i < rank_errors_.size(); ++i) {
    others += (others.empty() ? "" : "; ") + rank_errors_[i];
  }
  stop_->detail += "; then " + others;
  stop_->error += "; then " + others;
}

// An aborted run keeps what was measured (with a baseline, its analysis up to the revert) but
// never passes: its gates are not evaluated. Returns the run's error text.
std::string RunExecution::recordStop(int reverted, double reverted_ms) {
  StopRequest stop;
  {
    std::lock_guard lock(mu_);
    stop = *stop_;
  }
  const double condition_ms = std::max(0.0, msAt(stop.condition_ns));
  result_ = {{"passed", false},
             {"gates", json::array()},
             {"stop", stopResult(stop, condition_ms, reverted_ms, reverted)}};
  event("stopped", result_["stop"]);
  if (baseline_) {
    auto samples = store().samples(run_id_);
    if (samples.isOk()) {
      MeasuredResult measured = measuredResult(
          *samples, storedObservations(reverted_ms), faultWindows(timeline_.windows()),
          analysisParams(baseline_->first, baseline_->second, reverted_ms), survived());
      result_.update(measured.document);
    }
  }
  return stop.error;
}

}  // namespace fabric_chaos::scenarios
