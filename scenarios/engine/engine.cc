#include "scenarios/engine/engine.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/log.h"
#include "core/run_state.h"
#include "scenarios/analysis.h"
#include "scenarios/composition.h"
#include "scenarios/engine/fault_timeline.h"
#include "scenarios/engine/stop_conditions.h"
#include "scenarios/plan.h"

namespace fabric_chaos::scenarios {

using core::RunState;
using core::Status;
using core::StatusCode;
using nlohmann::json;

namespace {

// Journal entries name the agent that applied the fault (fault_timeline.cc writes them), so that
// start-up recovery asks the same agent to revert it.
AgentRef journalAgent(json& doc) {
  AgentRef ref;
  if (doc.is_object() && doc.contains("agent")) {
    ref.name = doc["agent"].value("name", "local");
    ref.token_file = doc["agent"].value("token_file", "");
    doc.erase("agent");
  }
  return ref;
}

// Several agents' workloads stopped together.
class CompositeWorkload : public agent::WorkloadHandle {
 public:
  void add(std::unique_ptr<agent::WorkloadHandle> part) { parts_.push_back(std::move(part)); }
  // In parallel: ranks on one agent must not outlive their peers on another by a grace period,
  // or they would log a spurious peer loss.
  void stop(int grace_ms) override {
    std::vector<std::thread> stoppers;
    for (auto& part : parts_) stoppers.emplace_back([&part, grace_ms] { part->stop(grace_ms); });
    for (auto& t : stoppers) t.join();
  }
  int runningRanks() const override {
    int running = 0;
    for (const auto& part : parts_) running += part->runningRanks();
    return running;
  }

 private:
  std::vector<std::unique_ptr<agent::WorkloadHandle>> parts_;
};

}  // namespace

// Why a run ended early, as stored in result.stop.
struct StopRequest {
  std::string reason;  // busbw_below, rank_died, max_duration, abort_request
  std::string detail;
  std::string error;         // the run's error text
  int64_t condition_ns = 0;  // steady clock: when the condition became true
};

// One run from start to stored verdict. Lives on its own thread; the dispatcher, abort() and
// live() reach it under Engine::mu_ and touch only atomics and state guarded by its own mu_.
class Engine::RunExecution : public agent::WorkloadListener {
 public:
  RunExecution(Engine& engine, int64_t run_id, int port)
      : engine_(engine),
        run_id_(run_id),
        port_(port),
        origin_ns_(engine.deps_.clock->nowNs()),
        recorder_(*engine.deps_.store),
        timeline_({engine.deps_.store, engine.deps_.agents, engine.deps_.clock, &recorder_, run_id,
                   origin_ns_, [this] { progressed(); }},
                  Fabric{}) {}

  // The run thread is alive and moving (app/lease_heartbeat.h).
  void progressed() { progress_ns_ = now(); }
  bool stalled(int64_t now_ns, int64_t stale_ns) const {
    return timeline_.activeCount() > 0 && now_ns - progress_ns_.load() > stale_ns;
  }

  // The first request wins; later ones (a rank dying during an abort) change nothing.
  void requestStop(StopRequest request) {
    {
      std::lock_guard lock(mu_);
      if (stop_) return;
      stop_ = std::move(request);
    }
    stop_requested_ = true;
    ready_cv_.notify_all();
    engine_.deps_.clock->wake();
  }

  void requestAbort(const std::string& detail, const std::string& error) {
    requestStop({"abort_request", detail, error, now()});
  }

  LiveStatus live() {
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

  void execute() {
    auto record = store().getRun(run_id_);
    if (!record.isOk()) {
      core::logError("run " + std::to_string(run_id_) + ": " + record.status().toString());
      return;
    }
    if (core::isFinalRunState(record->state)) return;  // aborted while queued
    Status outcome = run(*record);
    // Every fault comes off before the verdict; a revert that keeps failing is retried for
    // revert_retry_budget_ms and then reported, never hidden behind a passed run.
    const int reverted =
        timeline_.revertAll(stop_requested_ ? "stop condition" : "run ended",
                            now() + engine_.options_.revert_retry_budget_ms * 1000000);
    const double reverted_ms = msSinceOrigin();
    stopWatching();
    stopping_workload_ = true;
    if (workload_) workload_->stop(engine_.options_.stop_grace_ms);
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

  // WorkloadListener: called from the agent's reader threads.
  void onSamples(const std::vector<core::Sample>& samples) override {
    if (samples.empty()) return;
    if (Status s = store().appendSamples(run_id_, samples); !s.isOk()) {
      core::logError("run " + std::to_string(run_id_) + ": storing samples: " + s.toString());
    }
    std::lock_guard lock(mu_);
    sample_count_ += static_cast<int64_t>(samples.size());
    const auto& last = samples.back();
    last_busbw_ = busBandwidthGBps(last.bytes, last.duration_ms, world_);
    if (busbw_watch_) {
      for (const auto& s : samples) {
        busbw_watch_->onIteration(s.start_ms + s.duration_ms,
                                  busBandwidthGBps(s.bytes, s.duration_ms, world_));
      }
    }
  }

  void onEvent(int rank, double t_ms, const std::string& kind, const json& detail) override {
    json d = detail.is_object() ? detail : json::object();
    d["rank"] = rank;
    recorder_.event({run_id_, t_ms, core::wallNowMs(), kind, d});
    if (kind == "rank_ready") {
      std::lock_guard lock(mu_);
      ++ready_ranks_;
      ready_cv_.notify_all();
    }
  }

  void onRankExit(int rank, int exit_code) override {
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
      // A rank that dies before we stop it did not survive.
      if (!expected) rank_died_ = true;
      stop = !expected && watching_ && on_rank_death_;
    }
    ready_cv_.notify_all();
    if (stop) {
      const std::string what = "rank " + std::to_string(rank) + " exited unexpectedly (exit code " +
                               std::to_string(exit_code) + ")";
      requestStop({"rank_died", what, "stop condition: " + what, t_ns});
    }
  }

 private:
  store::Store& store() { return *engine_.deps_.store; }
  int64_t now() { return engine_.deps_.clock->nowNs(); }
  double msAt(int64_t t_ns) const { return static_cast<double>(t_ns - origin_ns_) / 1e6; }
  double msSinceOrigin() { return msAt(now()); }
  int64_t nsAt(double ms) const { return origin_ns_ + static_cast<int64_t>(ms * 1e6); }

  void setState(RunState state) {
    {
      std::lock_guard lock(mu_);
      state_ = state;
    }
    const std::string name(core::runStateName(state));
    (void)store().setRunState(run_id_, name);
    event("state", {{"state", name}});
  }

  // Events are written off the run thread (RunRecorder); finish() flushes them first.
  void event(const std::string& kind, json detail) {
    recorder_.event({run_id_, msSinceOrigin(), core::wallNowMs(), kind, std::move(detail)});
  }

  void finish(RunState state, std::optional<double> score, const std::string& error) {
    recorder_.flush();  // a final run has its whole timeline stored
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

  // Checks the time-based stop conditions (max duration, low busbw) and returns the next instant
  // one of them could become true.
  int64_t checkTimedConditions() {
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

  // Sleeps until origin-relative `deadline_ms`; false when a stop condition or an abort ended
  // the wait. Sleeps in short slices: a wake() racing with the start of a sleep is not lost for
  // more than one slice, and a good iteration that moves the busbw deadline is re-read.
  bool waitUntilMs(double deadline_ms) {
    const int64_t deadline = nsAt(deadline_ms);
    for (;;) {
      progressed();
      if (stop_requested_) return false;
      const int64_t next_condition = checkTimedConditions();
      if (stop_requested_) return false;
      timeline_.retryDue();
      const int64_t t = now();
      if (t >= deadline) return true;
      int64_t wake_at =
          std::min({deadline, next_condition, t + kMaxSleepSliceMs * int64_t{1000000}});
      if (auto retry = timeline_.nextRetryNs()) wake_at = std::min(wake_at, *retry);
      engine_.deps_.clock->sleepUntilNs(wake_at);
    }
  }

  // From the first fault apply to the end of the recovery window.
  void startWatching() {
    bool already_dead = false;
    {
      std::lock_guard lock(mu_);
      if (watching_) return;
      watching_ = true;
      if (busbw_threshold_) {
        busbw_watch_.emplace(*busbw_threshold_, static_cast<double>(busbw_for_ms_),
                             msSinceOrigin());
      }
      already_dead = rank_died_ && on_rank_death_;
    }
    // A rank lost during the baseline: injecting into a broken ring would measure nothing.
    if (already_dead) {
      const std::string what = "a rank exited unexpectedly before the first fault";
      requestStop({"rank_died", what, "stop condition: " + what, now()});
    }
  }
  void stopWatching() {
    std::lock_guard lock(mu_);
    watching_ = false;
  }

  Status run(const store::RunRecord& record) {
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

    auto fabric = engine_.deps_.fabrics->get(record.fabric);
    if (!fabric.isOk()) return fabric.status();
    auto plan = planFaults(scenario, *fabric);
    if (!plan.isOk()) return plan.status();
    // Validated at submission; checked again because the fabric may have changed since.
    FC_RETURN_IF_ERROR(checkComposition(*plan));
    fabric_ = fabric.value();
    timeline_.setFabric(fabric_);
    FC_RETURN_IF_ERROR(recordBackends(*plan));

    std::vector<agent::RankSpec> ranks;
    std::vector<AgentRef> rank_agents;
    FC_RETURN_IF_ERROR(buildRanks(scenario, *fabric, ranks, rank_agents));
    {
      std::lock_guard lock(mu_);
      world_ = static_cast<int>(ranks.size());
    }
    if (stop_requested_) return Status::ok();
    FC_RETURN_IF_ERROR(startWorkload(ranks, rank_agents));
    event("workload_started", {{"ranks", world_},
                               {"port", port_},
                               {"message_bytes", scenario.workload.message_bytes},
                               {"compute_ms", scenario.workload.compute_ms}});
    FC_RETURN_IF_ERROR(waitForRing());
    if (stop_requested_) return Status::ok();
    // Every state the plan will change is captured and journaled now, once, so that no
    // scheduled instant waits for it.
    FC_RETURN_IF_ERROR(timeline_.prepare(*plan));

    setState(RunState::kBaseline);
    const double baseline_start = msSinceOrigin();
    const double baseline_end = baseline_start + static_cast<double>(scenario.baseline_ms);
    if (!waitUntilMs(baseline_end)) return Status::ok();
    baseline_ = {baseline_start, baseline_end};
    FC_RETURN_IF_ERROR(armBusbwCondition(scenario, baseline_start, baseline_end));

    setState(RunState::kInjecting);
    FC_RETURN_IF_ERROR(runFaultTimeline(*plan, baseline_end));
    if (stop_requested_) return Status::ok();

    setState(RunState::kRecovering);
    const double last_revert = lastRevertMs(baseline_end);
    const double observe_end = last_revert + static_cast<double>(scenario.recovery_ms);
    if (!waitUntilMs(observe_end)) return Status::ok();

    stopWatching();
    stopping_workload_ = true;  // from here a rank exit is expected, not a death
    workload_->stop(engine_.options_.stop_grace_ms);
    event("workload_stopped", json::object());

    setState(RunState::kAnalysing);
    return analyse(scenario, baseline_start, baseline_end, observe_end);
  }

  // The busbw threshold is a fraction of the baseline median, computed as the analysis will.
  Status armBusbwCondition(const Scenario& scenario, double baseline_start, double baseline_end) {
    const StopConditions& stop = scenario.stop_conditions;
    if (!stop.min_busbw_fraction) return Status::ok();
    auto samples = store().samples(run_id_);
    if (!samples.isOk()) return samples.status().withContext("reading the baseline samples");
    AnalysisParams params;
    params.world_size = world_;
    params.baseline_start_ms = baseline_start;
    params.baseline_end_ms = baseline_end;
    params.observe_end_ms = baseline_end;
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
  Status recordBackends(const std::vector<PlannedAction>& plan) {
    json backends = json::object();
    for (const auto& action : plan) {
      auto agent = agentFor(agentForTarget(fabric_, action.target));
      if (!agent.isOk()) return agent.status();
      for (const auto& info : (*agent)->capabilities()) {
        if (info.kind != action.kind) continue;
        if (!info.available) {
          return Status(StatusCode::kNotSupported, "fault kind " + info.kind +
                                                       " is not available on " +
                                                       action.target.host + ": " + info.reason);
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

  core::Result<agent::Agent*> agentFor(const AgentRef& ref) {
    return engine_.deps_.agents->agentFor(ref);
  }

  // One workload per agent (the namespace lab: one local agent for every rank; the VM lab: one
  // agent per VM), presented to the rest of the run as a single handle.
  Status startWorkload(const std::vector<agent::RankSpec>& ranks,
                       const std::vector<AgentRef>& rank_agents) {
    std::map<std::string, std::vector<agent::RankSpec>> by_agent;
    std::map<std::string, AgentRef> refs;
    for (size_t i = 0; i < ranks.size(); ++i) {
      by_agent[rank_agents[i].name].push_back(ranks[i]);
      refs[rank_agents[i].name] = rank_agents[i];
    }
    auto composite = std::make_unique<CompositeWorkload>();
    for (const auto& [name, group] : by_agent) {
      auto agent = agentFor(refs[name]);
      if (!agent.isOk()) return agent.status();
      auto handle = (*agent)->startWorkload(group, origin_ns_, this);
      if (!handle.isOk()) {
        composite->stop(engine_.options_.stop_grace_ms);
        return handle.status();
      }
      composite->add(std::move(handle.value()));
    }
    workload_ = std::move(composite);
    return Status::ok();
  }

  Status buildRanks(const Scenario& scenario, const Fabric& fabric,
                    std::vector<agent::RankSpec>& ranks, std::vector<AgentRef>& rank_agents) {
    std::vector<const Host*> hosts;
    if (scenario.workload.hosts.empty()) {
      for (const auto& h : fabric.hosts) hosts.push_back(&h);
    } else {
      for (const auto& name : scenario.workload.hosts) {
        const Host* h = fabric.findHost(name);
        if (h == nullptr) {
          return Status(StatusCode::kUnprocessable,
                        "workload host " + name + " is not in fabric " + fabric.name);
        }
        hosts.push_back(h);
      }
    }
    if (hosts.size() < 2) {
      return Status(StatusCode::kUnprocessable, "the workload needs at least 2 hosts");
    }
    const int world = static_cast<int>(hosts.size());
    for (int i = 0; i < world; ++i) {
      const Host& host = *hosts[static_cast<size_t>(i)];
      const Host& next = *hosts[static_cast<size_t>((i + 1) % world)];
      if (host.nics.empty() || next.nics.empty()) {
        return Status(StatusCode::kUnprocessable, "host " + host.name + " has no NIC address");
      }
      agent::RankSpec spec;
      spec.rank = i;
      spec.world = world;
      spec.netns = host.netns;
      spec.listen_addr = host.nics[0].address;
      spec.port = port_;
      spec.next_addr = next.nics[0].address;
      spec.next_port = port_;
      spec.message_bytes = scenario.workload.message_bytes;
      spec.compute_ms = scenario.workload.compute_ms;
      spec.peer_timeout_ms = scenario.workload.peer_timeout_ms;
      spec.reconnect_budget_ms = scenario.workload.reconnect_budget_ms;
      spec.transport = scenario.workload.transport;
      // The engine stops the ranks itself; their own limit only guards against a lost engine.
      spec.max_duration_ms = scenario.max_duration_ms + 60000;
      ranks.push_back(spec);
      rank_agents.push_back(AgentRef{host.agent, host.agent_token_file});
    }
    return Status::ok();
  }

  Status waitForRing() {
    const int64_t ready_deadline = now() + int64_t{engine_.options_.ready_timeout_ms} * 1000000;
    for (;;) {
      {
        std::unique_lock lock(mu_);
        if (stop_requested_) return Status::ok();
        if (rank_died_) {
          return Status(StatusCode::kUnavailable,
                        "a workload rank exited before the ring formed; see the run's events");
        }
        if (ready_ranks_ >= world_) return Status::ok();
        if (now() >= ready_deadline) {
          return Status(StatusCode::kTimeout,
                        "the workload ring did not form within " +
                            std::to_string(engine_.options_.ready_timeout_ms) + " ms (" +
                            std::to_string(ready_ranks_) + " of " + std::to_string(world_) +
                            " ranks ready)");
        }
        ready_cv_.wait_for(lock, std::chrono::milliseconds(kMaxSleepSliceMs));
      }
      (void)checkTimedConditions();
    }
  }

  Status runFaultTimeline(const std::vector<PlannedAction>& plan, double baseline_end) {
    // Two kinds of instants: applies and reverts. At equal times reverts go first so that
    // back-to-back phases on one interface never overlap.
    struct Instant {
      double at_ms;
      bool apply;
      size_t index;
    };
    std::vector<Instant> timeline;
    for (size_t i = 0; i < plan.size(); ++i) {
      timeline.push_back({baseline_end + static_cast<double>(plan[i].apply_at_ms), true, i});
      timeline.push_back({baseline_end + static_cast<double>(plan[i].revert_at_ms), false, i});
    }
    std::stable_sort(timeline.begin(), timeline.end(), [](const Instant& a, const Instant& b) {
      return a.at_ms != b.at_ms ? a.at_ms < b.at_ms : (!a.apply && b.apply);
    });
    // The actions of one instant (same time, same direction) go out together.
    for (size_t i = 0; i < timeline.size();) {
      const Instant& first = timeline[i];
      std::vector<size_t> group;
      for (; i < timeline.size() && timeline[i].at_ms == first.at_ms &&
             timeline[i].apply == first.apply;
           ++i) {
        group.push_back(timeline[i].index);
      }
      if (!waitUntilMs(first.at_ms)) return Status::ok();
      if (first.apply) {
        startWatching();
        if (stop_requested_) return Status::ok();  // a rank died before the first fault
        FC_RETURN_IF_ERROR(timeline_.apply(group, plan, first.at_ms));
      } else {
        timeline_.revert(group, "scheduled", first.at_ms, false);
      }
    }
    return Status::ok();
  }

  double lastRevertMs(double fallback) const {
    double last = fallback;
    for (const auto& [step, window] : timeline_.windows()) last = std::max(last, window.second);
    return last;
  }

  json windowsJson(std::vector<FaultWindow>& windows) const {
    json windows_json = json::array();
    for (const auto& [step, window] : timeline_.windows()) {
      windows.push_back({step, window.first, window.second});
      windows_json.push_back(
          {{"step", step}, {"start_ms", window.first}, {"end_ms", window.second}});
    }
    return windows_json;
  }

  bool survived() {
    std::lock_guard lock(mu_);
    return !rank_died_;
  }

  Status analyse(const Scenario& scenario, double baseline_start, double baseline_end,
                 double observe_end) {
    auto samples = store().samples(run_id_);
    if (!samples.isOk()) return samples.status();
    std::vector<FaultWindow> windows;
    json windows_json = windowsJson(windows);
    AnalysisParams params;
    params.world_size = world_;
    params.baseline_start_ms = baseline_start;
    params.baseline_end_ms = baseline_end;
    params.observe_end_ms = observe_end;
    params.tolerance = scenario.tolerance;
    params.recovered_after = scenario.recovered_after;
    RunAnalysis analysis = analyzeRun(*samples, windows, params, survived());
    auto verdicts = checkGates(scenario.gates, analysis);
    const bool passed = allPassed(verdicts);
    result_ = {{"analysis", toJson(analysis)},
               {"gates", toJson(verdicts)},
               {"passed", passed},
               {"fault_windows", windows_json},
               {"baseline", {{"start_ms", baseline_start}, {"end_ms", baseline_end}}},
               {"observe_end_ms", observe_end},
               {"world_size", world_},
               {"samples", samples->size()}};
    verdict_.emplace(passed ? RunState::kPassed : RunState::kFailed, analysis.score);
    return Status::ok();
  }

  // A run that could not take a fault back ends in error, whatever it measured: the fabric is not
  // as it found it. result.fault_left names each one; the journal keeps them for start-up recovery
  // and GET /v1/faults lists them. Returns the run's error text.
  std::string recordFaultsLeft(const std::vector<LeftFault>& left, const std::string& error) {
    json faults = json::array();
    std::string text = std::to_string(left.size()) + " fault(s) could not be reverted:";
    for (const LeftFault& f : left) {
      json entry = {{"kind", f.kind},
                    {"target", describeTarget(f.target)},
                    {"target_type", injectors::toString(injectors::typeOf(f.target.target))},
                    {"host", f.target.host},
                    {"journal_id", f.journal_id},
                    {"attempts", f.attempts},
                    {"error", f.error}};
      if (const injectors::InterfaceTarget* interface = injectors::interfaceOf(f.target.target)) {
        entry["netns"] = interface->netns;
        entry["ifname"] = interface->ifname;
      }
      faults.push_back(std::move(entry));
      text += " " + f.kind + " on " + describeTarget(f.target) + " (" + std::to_string(f.attempts) +
              " attempts: " + f.error + ");";
    }
    text +=
        " it stays in the fault journal: GET /v1/faults lists it and start-up recovery "
        "retries it";
    result_["passed"] = false;
    result_["fault_left"] = faults;
    if (verdict_) result_["verdict_before_fault_left"] = core::runStateName(verdict_->first);
    event("fault_left", {{"faults", faults}});
    return error.empty() ? text : error + "; " + text;
  }

  // An aborted run keeps what was measured (with a baseline, its analysis up to the revert) but
  // never passes: its gates are not evaluated. Returns the run's error text.
  std::string recordStop(int reverted, double reverted_ms) {
    StopRequest stop;
    {
      std::lock_guard lock(mu_);
      stop = *stop_;
    }
    const double condition_ms = std::max(0.0, msAt(stop.condition_ns));
    result_ = {{"passed", false},
               {"gates", json::array()},
               {"stop",
                {{"reason", stop.reason},
                 {"detail", stop.detail},
                 {"condition_ms", condition_ms},
                 {"reverted_ms", reverted_ms},
                 {"time_to_revert_ms", reverted_ms - condition_ms},
                 {"faults_reverted", reverted}}}};
    event("stopped", result_["stop"]);
    if (baseline_) {
      auto samples = store().samples(run_id_);
      if (samples.isOk()) {
        std::vector<FaultWindow> windows;
        result_["fault_windows"] = windowsJson(windows);
        AnalysisParams params;
        params.world_size = world_;
        params.baseline_start_ms = baseline_->first;
        params.baseline_end_ms = baseline_->second;
        params.observe_end_ms = reverted_ms;
        params.tolerance = tolerance_;
        params.recovered_after = recovered_after_;
        result_["analysis"] = toJson(analyzeRun(*samples, windows, params, survived()));
        result_["baseline"] = {{"start_ms", baseline_->first}, {"end_ms", baseline_->second}};
        result_["observe_end_ms"] = reverted_ms;
        result_["world_size"] = world_;
        result_["samples"] = samples->size();
      }
    }
    return stop.error;
  }

  static constexpr int64_t kMaxSleepSliceMs = 50;

  Engine& engine_;
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
  json result_ = json::object();
  RunRecorder recorder_;    // events and journal marks, written off the run thread
  FaultTimeline timeline_;  // run thread only, but for activeCount()
  // analyse()'s verdict: state and score. Run thread only.
  std::optional<std::pair<RunState, std::optional<double>>> verdict_;
  std::optional<std::pair<double, double>> baseline_;  // run thread only

  std::mutex mu_;  // guards what listener threads and live() share with the run thread
  std::condition_variable ready_cv_;
  RunState state_ = RunState::kQueued;
  int world_ = 2;
  int ready_ranks_ = 0;
  bool rank_died_ = false;
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

Engine::Engine(EngineDeps deps, EngineOptions options)
    : deps_(deps), options_(std::move(options)), locks_(options_.max_parallel_runs) {}

Engine::~Engine() { shutdown(); }

core::Result<StartupRecovery> Engine::recoverAtStartup() {
  StartupRecovery report;
  auto entries = deps_.store->unrevertedJournal();
  if (!entries.isOk()) return entries.status();
  for (const auto& entry : *entries) {
    json doc = entry.fault;
    const AgentRef ref = journalAgent(doc);
    auto fault = injectors::faultFromJson(doc);
    auto agent = deps_.agents->agentFor(ref);
    Status s = !fault.isOk()   ? fault.status()
               : !agent.isOk() ? agent.status()
                               : (*agent)->revertFault(*fault, entry.prior);
    if (s.isOk()) {
      ++report.reverted;
      (void)deps_.store->journalMark(entry.id, "reverted");
      core::logInfo("start-up recovery: reverted " + entry.fault.dump());
      if (entry.run_id != 0) {
        (void)deps_.store->appendEvent({entry.run_id,
                                        0,
                                        core::wallNowMs(),
                                        "fault_reverted",
                                        {{"reason", "start-up recovery"}, {"fault", entry.fault}}});
      }
    } else {
      ++report.failed;
      core::logError("start-up recovery: cannot revert " + entry.fault.dump() + ": " +
                     s.toString());
    }
  }
  auto interrupted = deps_.store->interruptUnfinishedRuns();
  if (!interrupted.isOk()) return interrupted.status();
  report.interrupted = interrupted.value();
  return report;
}

void Engine::start() {
  std::lock_guard lock(mu_);
  if (started_ || stopping_) return;
  started_ = true;
  dirty_ = true;  // runs submitted before start() are waiting
  dispatcher_ = std::thread([this] { dispatchLoop(); });
}

void Engine::shutdown() {
  std::vector<int64_t> queued;
  {
    std::lock_guard lock(mu_);
    if (stopping_ && !dispatcher_.joinable()) return;
    stopping_ = true;
    for (auto& [id, slot] : running_) {
      slot.execution->requestAbort("serve is shutting down",
                                   "aborted: serve shut down during the run");
    }
    queued.assign(pending_.begin(), pending_.end());
    for (int64_t id : locks_.queued()) {
      queued.push_back(id);
      locks_.dequeue(id);
    }
    pending_.clear();
  }
  cv_.notify_all();
  // The dispatcher joins every run thread before it returns.
  if (dispatcher_.joinable()) dispatcher_.join();
  for (int64_t id : queued) {
    (void)deps_.store->finishRun(id, "aborted", std::nullopt, json::object(),
                                 "serve shut down before the run started");
  }
}

core::Result<int64_t> Engine::submit(const Scenario& scenario, const std::string& fabric) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return Status(StatusCode::kUnavailable, "the engine is shutting down");
  }
  auto id = deps_.store->createRun(scenario.name, toJson(scenario), fabric);
  if (!id.isOk()) return id.status();
  {
    std::lock_guard lock(mu_);
    pending_.push_back(id.value());
    dirty_ = true;
  }
  cv_.notify_all();
  return id;
}

Status Engine::abort(int64_t run_id) {
  auto record = deps_.store->getRun(run_id);
  if (!record.isOk()) return record.status();
  bool was_queued = false;
  {
    std::lock_guard lock(mu_);
    if (auto it = std::find(pending_.begin(), pending_.end(), run_id); it != pending_.end()) {
      pending_.erase(it);
      was_queued = true;
    } else if (locks_.dequeue(run_id)) {
      was_queued = true;
      dirty_ = true;  // its reservations are gone: a run behind it may start
    } else if (auto slot = running_.find(run_id); slot != running_.end() && !slot->second.done) {
      slot->second.execution->requestAbort(
          "aborted on request (POST /v1/runs/" + std::to_string(run_id) + "/abort)",
          "aborted on request");
      return Status::ok();
    }
  }
  if (was_queued) {
    cv_.notify_all();
    return deps_.store->finishRun(run_id, "aborted", std::nullopt, json::object(),
                                  "aborted before it started");
  }
  auto latest = deps_.store->getRun(run_id);
  return Status(StatusCode::kFailedPrecondition,
                "run " + std::to_string(run_id) + " has already finished (" +
                    (latest.isOk() ? latest->state : record->state) + ")");
}

bool Engine::ownedByRunningRun(int64_t run_id) {
  std::lock_guard lock(mu_);
  auto slot = running_.find(run_id);
  return slot != running_.end() && !slot->second.done;
}

Status Engine::revertNow(int64_t journal_id) {
  auto entries = deps_.store->unrevertedJournal();
  if (!entries.isOk()) return entries.status();
  auto entry = std::find_if(entries->begin(), entries->end(),
                            [&](const store::JournalEntry& e) { return e.id == journal_id; });
  if (entry == entries->end()) {
    return Status(StatusCode::kNotFound,
                  "no fault " + std::to_string(journal_id) + " in force (already reverted?)");
  }
  if (entry->run_id != 0 && ownedByRunningRun(entry->run_id)) {
    const std::string run = std::to_string(entry->run_id);
    return Status(StatusCode::kFailedPrecondition,
                  "fault " + std::to_string(journal_id) + " belongs to run " + run +
                      ", which is running and reverts it on schedule; POST /v1/runs/" + run +
                      "/abort reverts all its faults now");
  }
  json doc = entry->fault;
  const AgentRef ref = journalAgent(doc);
  auto fault = injectors::faultFromJson(doc);
  if (!fault.isOk())
    return fault.status().withContext("journal entry " + std::to_string(journal_id));
  auto agent = deps_.agents->agentFor(ref);
  if (!agent.isOk()) return agent.status();
  if (Status s = (*agent)->revertFault(*fault, entry->prior); !s.isOk()) {
    return s.withContext("reverting fault " + std::to_string(journal_id));
  }
  FC_RETURN_IF_ERROR(deps_.store->journalMark(journal_id, "reverted"));
  core::logInfo("operator reverted fault " + std::to_string(journal_id) + ": " +
                entry->fault.dump());
  if (entry->run_id != 0) {
    (void)deps_.store->appendEvent(
        {entry->run_id,
         0,
         core::wallNowMs(),
         "fault_reverted",
         {{"reason", "operator (POST /v1/faults/" + std::to_string(journal_id) + "/revert)"},
          {"journal_id", journal_id},
          {"fault", entry->fault}}});
  }
  return Status::ok();
}

bool Engine::holdsFaultsWithoutProgress(int64_t stale_ms) {
  const int64_t now = deps_.clock->nowNs();
  std::lock_guard lock(mu_);
  for (const auto& [id, slot] : running_) {
    if (!slot.done && slot.execution->stalled(now, stale_ms * 1000000)) return true;
  }
  return false;
}

std::optional<LiveStatus> Engine::live(int64_t run_id) {
  std::lock_guard lock(mu_);
  auto slot = running_.find(run_id);
  if (slot == running_.end()) return std::nullopt;
  LiveStatus status = slot->second.execution->live();
  // Finished but not yet reaped by the dispatcher: the store has the final word.
  if (core::isFinalRunState(status.state)) return std::nullopt;
  return status;
}

std::set<std::string> Engine::targetsOf(int64_t run_id) {
  // A run whose targets cannot be worked out holds nothing: it fails on the same error before it
  // touches the fabric.
  auto record = deps_.store->getRun(run_id);
  if (!record.isOk()) return {};
  auto scenario = parseScenario(record->scenario);
  if (!scenario.isOk()) return {};
  auto fabric = deps_.fabrics->get(record->fabric);
  if (!fabric.isOk()) return {};
  auto targets = runTargets(*scenario, *fabric);
  return targets.isOk() ? std::move(targets.value()) : std::set<std::string>{};
}

int Engine::pickPort(int64_t run_id) const {
  // Concurrent runs never share a host, so equal ports could not collide on a wire; distinct ports
  // still keep a rank that outlives its run (a lost engine) from meeting the next run's ranks.
  std::set<int> used;
  for (const auto& [id, slot] : running_) used.insert(slot.port);
  const int span = 1000;
  const int first = static_cast<int>(run_id % span);
  for (int i = 0; i < span; ++i) {
    const int port = options_.base_port + (first + i) % span;
    if (used.count(port) == 0) return port;
  }
  return options_.base_port + first;
}

void Engine::launch(int64_t run_id) {
  Slot& slot = running_[run_id];
  slot.port = pickPort(run_id);
  slot.execution = std::make_unique<RunExecution>(*this, run_id, slot.port);
  if (stopping_)
    slot.execution->requestAbort("serve is shutting down",
                                 "aborted: serve shut down during the run");
  slot.thread = std::thread([this, run_id] { runThread(run_id); });
}

void Engine::runThread(int64_t run_id) {
  RunExecution* execution;
  {
    std::lock_guard lock(mu_);
    execution = running_.at(run_id).execution.get();
  }
  execution->execute();
  {
    std::lock_guard lock(mu_);
    locks_.release(run_id);
    running_.at(run_id).done = true;
    dirty_ = true;
  }
  cv_.notify_all();
}

void Engine::recordWaits(const std::map<int64_t, WaitReason>& changed) {
  for (const auto& [id, reason] : changed) {
    json doc = {
        {"runs", reason.holders}, {"queued_before", reason.ahead}, {"targets", reason.targets}};
    std::string why;
    if (reason.capacity) {
      why = "every run slot is busy (max_parallel_runs " +
            std::to_string(options_.max_parallel_runs) + ")";
    } else if (!reason.holders.empty()) {
      why = "targets held by run";
      for (size_t i = 0; i < reason.holders.size(); ++i) {
        why += (i == 0 ? " " : ", ") + std::to_string(reason.holders[i]);
      }
      if (!reason.ahead.empty()) why += " (and wanted by earlier queued runs)";
    } else {
      why = "targets wanted by earlier queued run";
      for (size_t i = 0; i < reason.ahead.size(); ++i) {
        why += (i == 0 ? " " : ", ") + std::to_string(reason.ahead[i]);
      }
    }
    doc["reason"] = why;
    (void)deps_.store->setRunAttribute(id, "waiting_for", doc);
    (void)deps_.store->appendEvent({id, 0, core::wallNowMs(), "waiting", doc});
  }
}

void Engine::dispatchLoop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || dirty_; });
    if (stopping_) break;
    dirty_ = false;
    // Threads of finished runs: they released their targets already.
    for (auto it = running_.begin(); it != running_.end();) {
      if (!it->second.done) {
        ++it;
        continue;
      }
      std::thread t = std::move(it->second.thread);
      lock.unlock();
      t.join();
      lock.lock();
      it = running_.erase(it);
    }
    // Targets need the store and the fabric: worked out without the lock, in queue order.
    const std::vector<int64_t> pending(pending_.begin(), pending_.end());
    lock.unlock();
    std::vector<std::pair<int64_t, std::set<std::string>>> computed;
    for (int64_t id : pending) computed.emplace_back(id, targetsOf(id));
    lock.lock();
    if (stopping_) break;
    for (auto& [id, targets] : computed) {
      auto it = std::find(pending_.begin(), pending_.end(), id);
      if (it == pending_.end()) continue;  // aborted meanwhile
      pending_.erase(it);
      locks_.enqueue(id, std::move(targets));
    }
    for (int64_t id : locks_.admit()) {
      if (last_waits_.count(id) != 0) {
        last_waits_.erase(id);
        (void)deps_.store->setRunAttribute(id, "waiting_for", nullptr);
      }
      launch(id);
    }
    std::map<int64_t, WaitReason> changed;
    for (const auto& [id, reason] : locks_.waiting()) {
      auto last = last_waits_.find(id);
      if (last == last_waits_.end() || last->second != reason) changed[id] = reason;
    }
    for (auto it = last_waits_.begin(); it != last_waits_.end();) {
      it = locks_.waiting().count(it->first) != 0 ? std::next(it) : last_waits_.erase(it);
    }
    for (const auto& [id, reason] : changed) last_waits_[id] = reason;
    if (!changed.empty()) {
      lock.unlock();
      recordWaits(changed);
      lock.lock();
    }
  }
  // Shutting down: every running run has been asked to stop; wait for each to revert and end.
  while (!running_.empty()) {
    auto it = running_.begin();
    std::thread t = std::move(it->second.thread);
    lock.unlock();
    if (t.joinable()) t.join();
    lock.lock();
    running_.erase(it->first);
  }
}

}  // namespace fabric_chaos::scenarios
