#include "scenarios/engine/engine.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/log.h"
#include "scenarios/analysis.h"
#include "scenarios/plan.h"

namespace fabric_chaos::scenarios {

using core::Status;
using core::StatusCode;
using nlohmann::json;

namespace {

bool isFinal(const std::string& state) {
  static const std::set<std::string> kFinal{"passed", "failed", "aborted", "interrupted", "error"};
  return kFinal.count(state) > 0;
}

injectors::Fault faultFor(const PlannedAction& action) {
  return injectors::Fault{action.kind, {action.target.netns, action.target.ifname}, action.params};
}

// Journal entries carry the agent that applied the fault, so that start-up recovery asks the same
// agent to revert it. The fault itself stays in injectors::toJson form under "fault".
json journalFault(const injectors::Fault& fault, const AgentRef& agent) {
  json doc = injectors::toJson(fault);
  if (!agent.isLocal()) doc["agent"] = {{"name", agent.name}, {"token_file", agent.token_file}};
  return doc;
}

AgentRef journalAgent(json& doc) {
  AgentRef ref;
  if (doc.is_object() && doc.contains("agent")) {
    ref.name = doc["agent"].value("name", "local");
    ref.token_file = doc["agent"].value("token_file", "");
    doc.erase("agent");
  }
  return ref;
}

// Faults on a host's own NIC go to that host's agent; switch ports live in the lab's switch
// namespaces on the controller's machine, so the local agent acts on them.
AgentRef agentForTarget(const Fabric& fabric, const ResolvedTarget& target) {
  if (target.side != "host") return AgentRef{};
  const Host* host = fabric.findHost(target.host);
  return host == nullptr ? AgentRef{} : AgentRef{host->agent, host->agent_token_file};
}

json targetJson(const ResolvedTarget& t) {
  return {{"host", t.host},
          {"link", t.link_id},
          {"side", t.side},
          {"netns", t.netns},
          {"ifname", t.ifname}};
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

// One run from start to stored verdict. Lives on the worker thread; abort() and live() reach it
// under Engine::mu_ and touch only atomics and the recorder's own lock.
class Engine::RunExecution : public agent::WorkloadListener {
 public:
  RunExecution(Engine& engine, int64_t run_id) : engine_(engine), run_id_(run_id) {}

  void requestAbort() {
    abort_requested_ = true;
    engine_.deps_.clock->wake();
  }

  LiveStatus live() {
    std::lock_guard lock(mu_);
    LiveStatus s;
    s.run_id = run_id_;
    s.state = state_;
    s.elapsed_ms = origin_ns_ == 0 ? 0 : msSinceOrigin();
    s.last_busbw_gbps = last_busbw_;
    s.samples = sample_count_;
    s.active_faults = static_cast<int>(active_.size());
    s.ready_ranks = ready_ranks_;
    return s;
  }

  void execute() {
    auto record = store().getRun(run_id_);
    if (!record.isOk()) {
      core::logError("run " + std::to_string(run_id_) + ": " + record.status().toString());
      return;
    }
    if (isFinal(record->state)) return;  // aborted while queued
    Status outcome = run(*record);
    revertAll("run ended");
    if (workload_) workload_->stop(engine_.options_.stop_grace_ms);
    if (finished_) return;
    if (abort_requested_) {
      finish("aborted", std::nullopt, "aborted on request");
    } else if (!outcome.isOk()) {
      finish("error", std::nullopt, outcome.message());
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
  }

  void onEvent(int rank, double t_ms, const std::string& kind, const json& detail) override {
    json d = detail.is_object() ? detail : json::object();
    d["rank"] = rank;
    (void)store().appendEvent({run_id_, t_ms, core::wallNowMs(), kind, d});
    if (kind == "rank_ready") {
      std::lock_guard lock(mu_);
      ++ready_ranks_;
      ready_cv_.notify_all();
    }
  }

  void onRankExit(int rank, int exit_code) override {
    const bool expected = stopping_workload_;
    (void)store().appendEvent({run_id_,
                               msSinceOrigin(),
                               core::wallNowMs(),
                               "rank_exit",
                               {{"rank", rank}, {"exit_code", exit_code}, {"expected", expected}}});
    std::lock_guard lock(mu_);
    if (!expected || exit_code != 0) {
      // A rank that dies before we stop it, or fails on the way out, did not survive.
      if (!expected) rank_died_ = true;
    }
    ready_cv_.notify_all();
  }

 private:
  store::Store& store() { return *engine_.deps_.store; }
  int64_t now() { return engine_.deps_.clock->nowNs(); }
  double msSinceOrigin() { return static_cast<double>(now() - origin_ns_) / 1e6; }

  void setState(const std::string& state) {
    {
      std::lock_guard lock(mu_);
      state_ = state;
    }
    (void)store().setRunState(run_id_, state);
    event("state", {{"state", state}});
  }

  void event(const std::string& kind, json detail) {
    (void)store().appendEvent(
        {run_id_, msSinceOrigin(), core::wallNowMs(), kind, std::move(detail)});
  }

  void finish(const std::string& state, std::optional<double> score, const std::string& error) {
    finished_ = true;
    {
      std::lock_guard lock(mu_);
      state_ = state;
    }
    if (Status s = store().finishRun(run_id_, state, score, result_, error); !s.isOk()) {
      core::logError("run " + std::to_string(run_id_) + ": " + s.toString());
    }
    core::logInfo("run " + std::to_string(run_id_) + " " + state +
                  (score ? " score " + std::to_string(*score) : "") +
                  (error.empty() ? "" : ": " + error));
  }

  // Sleeps until origin-relative `deadline_ms`; false when an abort interrupted the wait.
  bool waitUntilMs(double deadline_ms) {
    const int64_t deadline = origin_ns_ + static_cast<int64_t>(deadline_ms * 1e6);
    while (!abort_requested_ && now() < deadline) engine_.deps_.clock->sleepUntilNs(deadline);
    return !abort_requested_;
  }

  Status run(const store::RunRecord& record) {
    auto scenario_result = parseScenario(record.scenario);
    if (!scenario_result.isOk()) return scenario_result.status();
    const Scenario scenario = std::move(scenario_result.value());
    origin_ns_ = now();  // run clock: samples and events are ms from here
    // Published so that outside observers (tests, operators' own probes) can line their
    // CLOCK_MONOTONIC readings up with the run's timeline.
    (void)store().setRunAttribute(run_id_, "clock_origin_steady_ns", origin_ns_.load());
    setState("preparing");

    auto fabric = engine_.deps_.fabrics->get(record.fabric);
    if (!fabric.isOk()) return fabric.status();
    auto plan = planFaults(scenario, *fabric);
    if (!plan.isOk()) return plan.status();
    fabric_ = fabric.value();
    FC_RETURN_IF_ERROR(recordBackends(*plan));

    std::vector<agent::RankSpec> ranks;
    std::vector<AgentRef> rank_agents;
    FC_RETURN_IF_ERROR(buildRanks(scenario, *fabric, ranks, rank_agents));
    world_ = static_cast<int>(ranks.size());
    FC_RETURN_IF_ERROR(startWorkload(ranks, rank_agents));
    event("workload_started", {{"ranks", world_},
                               {"message_bytes", scenario.workload.message_bytes},
                               {"compute_ms", scenario.workload.compute_ms}});
    FC_RETURN_IF_ERROR(waitForRing());
    if (abort_requested_) return Status::ok();

    setState("baseline");
    const double baseline_start = msSinceOrigin();
    const double baseline_end = baseline_start + static_cast<double>(scenario.baseline_ms);
    if (!waitUntilMs(baseline_end)) return Status::ok();

    setState("injecting");
    FC_RETURN_IF_ERROR(runFaultTimeline(*plan, baseline_end));
    if (abort_requested_) return Status::ok();

    setState("recovering");
    const double last_revert = lastRevertMs(baseline_end);
    const double observe_end = last_revert + static_cast<double>(scenario.recovery_ms);
    if (!waitUntilMs(observe_end)) return Status::ok();

    stopping_workload_ = true;  // from here a rank exit is expected, not a death
    workload_->stop(engine_.options_.stop_grace_ms);
    event("workload_stopped", json::object());

    setState("analysing");
    return analyse(scenario, baseline_start, baseline_end, observe_end);
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
        backends[info.kind] = info.backend;
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
    const int port = engine_.options_.base_port + static_cast<int>(run_id_ % 1000);
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
      spec.port = port;
      spec.next_addr = next.nics[0].address;
      spec.next_port = port;
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
    const auto timeout = std::chrono::milliseconds(engine_.options_.ready_timeout_ms);
    std::unique_lock lock(mu_);
    const bool ready = ready_cv_.wait_for(
        lock, timeout, [&] { return ready_ranks_ >= world_ || rank_died_ || abort_requested_; });
    if (abort_requested_) return Status::ok();
    if (rank_died_) {
      return Status(StatusCode::kUnavailable,
                    "a workload rank exited before the ring formed; see the run's events");
    }
    if (!ready) {
      return Status(StatusCode::kTimeout, "the workload ring did not form within " +
                                              std::to_string(engine_.options_.ready_timeout_ms) +
                                              " ms (" + std::to_string(ready_ranks_) + " of " +
                                              std::to_string(world_) + " ranks ready)");
    }
    return Status::ok();
  }

  struct ActiveFault {
    PlannedAction action;
    injectors::Fault fault;
    json prior;
    int64_t journal_id = 0;
    agent::Agent* agent = nullptr;
  };

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
    for (const auto& instant : timeline) {
      if (!waitUntilMs(instant.at_ms)) return Status::ok();
      const PlannedAction& action = plan[instant.index];
      if (instant.apply) {
        FC_RETURN_IF_ERROR(applyAction(instant.index, action, instant.at_ms));
      } else {
        revertAction(instant.index, "scheduled", instant.at_ms);
      }
    }
    return Status::ok();
  }

  Status applyAction(size_t index, const PlannedAction& action, double scheduled_ms) {
    const AgentRef agent_ref = agentForTarget(fabric_, action.target);
    auto agent = agentFor(agent_ref);
    if (!agent.isOk()) return agent.status();
    ActiveFault active{action, faultFor(action), json::object(), 0, agent.value()};
    auto prior = active.agent->captureFault(active.fault);
    if (!prior.isOk()) return prior.status().withContext("reading state before " + action.kind);
    active.prior = prior.value();
    // Intent first: if this process dies between here and the revert, start-up recovery finds it.
    auto journal =
        store().journalIntent(run_id_, journalFault(active.fault, agent_ref), active.prior);
    if (!journal.isOk()) return journal.status().withContext("journaling " + action.kind);
    active.journal_id = journal.value();
    {
      std::lock_guard lock(mu_);
      active_[index] = active;
    }
    Status applied = active.agent->applyFault(active.fault);
    const double t = msSinceOrigin();
    json detail = {{"step", action.step},     {"phase", action.phase},
                   {"kind", action.kind},     {"target", targetJson(action.target)},
                   {"params", action.params}, {"scheduled_ms", scheduled_ms}};
    if (!applied.isOk()) {
      detail["error"] = applied.message();
      event("fault_error", detail);
      // A half-applied fault is reverted in full by runFaultTimeline's caller (revertAll).
      return applied.withContext("applying " + action.kind + " on " + action.target.ifname);
    }
    (void)store().journalMark(active.journal_id, "applied");
    event("fault_applied", detail);
    auto [window, inserted] = windows_.try_emplace(action.step, t, t);
    if (!inserted) window->second.first = std::min(window->second.first, t);
    return Status::ok();
  }

  void revertAction(size_t index, const std::string& why, double scheduled_ms) {
    ActiveFault active;
    {
      std::lock_guard lock(mu_);
      auto it = active_.find(index);
      if (it == active_.end()) return;
      active = it->second;
    }
    json observed = json::object();
    if (auto o = active.agent->observeFault(active.fault); o.isOk()) observed = o.value();
    Status reverted = active.agent->revertFault(active.fault, active.prior);
    const double t = msSinceOrigin();
    json detail = {{"step", active.action.step},
                   {"phase", active.action.phase},
                   {"kind", active.action.kind},
                   {"target", targetJson(active.action.target)},
                   {"reason", why},
                   {"observed", observed}};
    if (scheduled_ms >= 0) detail["scheduled_ms"] = scheduled_ms;
    if (!reverted.isOk()) {
      // Left in the journal as unreverted: start-up recovery and lab down will retry.
      detail["error"] = reverted.message();
      event("revert_error", detail);
      core::logError("run " + std::to_string(run_id_) + ": revert failed: " + reverted.toString());
      (void)store().journalMark(active.journal_id, "failed");
    } else {
      (void)store().journalMark(active.journal_id, "reverted");
      event("fault_reverted", detail);
    }
    if (auto window = windows_.find(active.action.step); window != windows_.end()) {
      window->second.second = std::max(window->second.second, t);
    }
    std::lock_guard lock(mu_);
    active_.erase(index);
  }

  void revertAll(const std::string& why) {
    std::vector<size_t> indices;
    {
      std::lock_guard lock(mu_);
      for (const auto& [index, fault] : active_) indices.push_back(index);
    }
    for (size_t index : indices) revertAction(index, why, -1);
  }

  double lastRevertMs(double fallback) const {
    double last = fallback;
    for (const auto& [step, window] : windows_) last = std::max(last, window.second);
    return last;
  }

  Status analyse(const Scenario& scenario, double baseline_start, double baseline_end,
                 double observe_end) {
    auto samples = store().samples(run_id_);
    if (!samples.isOk()) return samples.status();
    std::vector<FaultWindow> windows;
    json windows_json = json::array();
    for (const auto& [step, window] : windows_) {
      windows.push_back({step, window.first, window.second});
      windows_json.push_back(
          {{"step", step}, {"start_ms", window.first}, {"end_ms", window.second}});
    }
    AnalysisParams params;
    params.world_size = world_;
    params.baseline_start_ms = baseline_start;
    params.baseline_end_ms = baseline_end;
    params.observe_end_ms = observe_end;
    params.tolerance = scenario.tolerance;
    params.recovered_after = scenario.recovered_after;
    bool survived;
    {
      std::lock_guard lock(mu_);
      survived = !rank_died_;
    }
    RunAnalysis analysis = analyzeRun(*samples, windows, params, survived);
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
    finish(passed ? "passed" : "failed", analysis.score, "");
    return Status::ok();
  }

  Engine& engine_;
  const int64_t run_id_;
  std::atomic<bool> abort_requested_{false};
  std::atomic<bool> stopping_workload_{false};
  bool finished_ = false;  // worker thread only
  std::atomic<int64_t> origin_ns_{0};
  int world_ = 2;
  std::unique_ptr<agent::WorkloadHandle> workload_;
  Fabric fabric_;  // the fabric as resolved when the run started
  json result_ = json::object();
  // step -> [first apply, last revert], origin-relative ms. Worker thread only.
  std::map<int, std::pair<double, double>> windows_;

  std::mutex mu_;  // guards what listener threads and live() share with the worker
  std::condition_variable ready_cv_;
  std::string state_ = "queued";
  int ready_ranks_ = 0;
  bool rank_died_ = false;
  int64_t sample_count_ = 0;
  double last_busbw_ = 0;
  std::map<size_t, ActiveFault> active_;
};

Engine::Engine(EngineDeps deps, EngineOptions options)
    : deps_(deps), options_(std::move(options)) {}

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
  if (worker_.joinable()) return;
  stopping_ = false;
  worker_ = std::thread([this] { workerLoop(); });
}

void Engine::shutdown() {
  std::vector<int64_t> queued;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    if (current_ != nullptr) current_->requestAbort();
    queued.assign(queue_.begin(), queue_.end());
    queue_.clear();
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  for (int64_t id : queued) {
    (void)deps_.store->finishRun(id, "aborted", std::nullopt, json::object(),
                                 "serve shut down before the run started");
  }
}

core::Result<int64_t> Engine::submit(const Scenario& scenario, const std::string& fabric) {
  auto id = deps_.store->createRun(scenario.name, toJson(scenario), fabric);
  if (!id.isOk()) return id.status();
  {
    std::lock_guard lock(mu_);
    queue_.push_back(id.value());
  }
  cv_.notify_all();
  return id;
}

Status Engine::abort(int64_t run_id) {
  auto record = deps_.store->getRun(run_id);
  if (!record.isOk()) return record.status();
  std::lock_guard lock(mu_);
  auto queued = std::find(queue_.begin(), queue_.end(), run_id);
  if (queued != queue_.end()) {
    queue_.erase(queued);
    return deps_.store->finishRun(run_id, "aborted", std::nullopt, json::object(),
                                  "aborted before it started");
  }
  if (current_ != nullptr && current_->live().run_id == run_id) {
    current_->requestAbort();
    return Status::ok();
  }
  return Status(StatusCode::kFailedPrecondition,
                "run " + std::to_string(run_id) + " has already finished (" + record->state + ")");
}

std::optional<LiveStatus> Engine::live(int64_t run_id) {
  std::lock_guard lock(mu_);
  if (current_ == nullptr) return std::nullopt;
  LiveStatus status = current_->live();
  if (status.run_id != run_id) return std::nullopt;
  return status;
}

void Engine::workerLoop() {
  for (;;) {
    int64_t run_id;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      run_id = queue_.front();
      queue_.pop_front();
    }
    RunExecution execution(*this, run_id);
    {
      std::lock_guard lock(mu_);
      current_ = &execution;
      if (stopping_) execution.requestAbort();
    }
    execution.execute();
    std::lock_guard lock(mu_);
    current_ = nullptr;
  }
}

}  // namespace fabric_chaos::scenarios
