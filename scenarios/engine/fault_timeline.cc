#include "scenarios/engine/fault_timeline.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "core/log.h"
#include "scenarios/composition.h"
#include "scenarios/congestion.h"
#include "scenarios/step_targets.h"

namespace fabric_chaos::scenarios {

using core::Status;
using core::StatusCode;
using nlohmann::json;

namespace {

injectors::Fault faultFor(const PlannedAction& action) {
  return injectors::Fault{action.kind, action.target.target, action.params};
}

// Journal entries carry the agent that applied the fault, so that start-up recovery asks the same
// agent to revert it. The fault itself stays in injectors::toJson form.
json journalFault(const injectors::Fault& fault, const AgentRef& agent) {
  json doc = injectors::toJson(fault);
  if (!agent.isLocal()) doc["agent"] = {{"name", agent.name}, {"token_file", agent.token_file}};
  return doc;
}

// The tagged target (an interface keeps its "netns" and "ifname" fields) and where it sits.
json targetJson(const ResolvedTarget& t) {
  json doc = injectors::toJson(t.target);
  doc["host"] = t.host;
  doc["link"] = t.link_id;
  doc["side"] = std::string(linkSideName(t.side));
  return doc;
}

json actionJson(const PlannedAction& action) {
  return {{"step", action.step},
          {"phase", action.phase},
          {"kind", action.kind},
          {"target", targetJson(action.target)}};
}

}  // namespace

int64_t revertRetryDelayMs(int attempts) {
  int64_t delay = 20;
  for (int i = 1; i < attempts && delay < 1000; ++i) delay *= 2;
  return std::min<int64_t>(delay, 1000);
}

FaultTimeline::FaultTimeline(FaultTimelineDeps deps, Fabric fabric)
    : deps_(deps), fabric_(std::move(fabric)) {}

double FaultTimeline::msNow() const {
  return static_cast<double>(deps_.clock->nowNs() - deps_.origin_ns) / 1e6;
}

void FaultTimeline::event(const std::string& kind, json detail) {
  store::EventRecord record{deps_.run_id, msNow(), core::wallNowMs(), kind, std::move(detail)};
  if (deps_.recorder != nullptr) {
    deps_.recorder->event(std::move(record));
  } else {
    (void)deps_.store->appendEvent(record);
  }
}

void FaultTimeline::mark(Pattern& pattern, const std::string& state) {
  if (pattern.last_mark == state) return;
  pattern.last_mark = state;
  if (deps_.recorder != nullptr) {
    deps_.recorder->journalMark(pattern.journal_id, state);
  } else {
    (void)deps_.store->journalMark(pattern.journal_id, state);
  }
}

void FaultTimeline::updateCount() { active_count_ = static_cast<int>(stacks_.size()); }

std::string FaultTimeline::stackKey(const PlannedAction& action) const {
  return targetKey(action.target) + "#" + kindTraits(action.kind).resource;
}

std::string FaultTimeline::patternKey(const PlannedAction& action) const {
  return stackKey(action) + "#" + action.kind;
}

FaultTimeline::Stack* FaultTimeline::holding(size_t index, std::string* key) {
  for (auto& [k, stack] : stacks_) {
    if (stack.members.count(index) != 0) {
      if (key != nullptr) *key = k;
      return &stack;
    }
  }
  return nullptr;
}

core::Result<FaultTimeline::Pattern*> FaultTimeline::patternFor(const PlannedAction& action) {
  const std::string key = patternKey(action);
  if (auto it = patterns_.find(key); it != patterns_.end()) return &it->second;
  const AgentRef ref = agentForTarget(fabric_, action.target);
  auto agent = deps_.agents->agentFor(ref);
  if (!agent.isOk()) return agent.status();
  const injectors::Fault fault = faultFor(action);
  const int64_t capture_started_ns = deps_.clock->nowNs();
  auto prior = (*agent)->captureFault(fault);
  if ((*agent)->appliesOnSchedule()) timedCapture(capture_started_ns);
  if (!prior.isOk()) {
    return prior.status().withContext("reading state before " + action.kind + " on " +
                                      describeTarget(action.target));
  }
  // Intent first: if this process dies from here on, start-up recovery finds it.
  auto journal = deps_.store->journalIntent(deps_.run_id, journalFault(fault, ref), *prior);
  if (!journal.isOk()) return journal.status().withContext("journaling " + action.kind);
  Pattern& pattern = patterns_[key];
  pattern.journal_id = journal.value();
  pattern.prior = prior.value();
  pattern.agent = agent.value();
  pattern.last_mark = "intent";
  return &pattern;
}

Status FaultTimeline::prepare(const std::vector<PlannedAction>& plan) {
  std::set<std::string> targets;
  for (const PlannedAction& action : plan) {
    auto pattern = patternFor(action);
    if (!pattern.isOk()) return pattern.status();
    ++(*pattern)->remaining;
    targets.insert(stackKey(action));
  }
  // One instant acts on at most every target at once; the threads wait from now on.
  calls_.reserve(targets.size());
  return Status::ok();
}

Status FaultTimeline::apply(const std::vector<size_t>& indices,
                            const std::vector<PlannedAction>& plan, double scheduled_ms) {
  Status first_error;
  auto fail = [&](const PlannedAction& action, json detail, const Status& s) {
    detail["error"] = s.message();
    event("fault_error", std::move(detail));
    if (first_error.isOk()) {
      first_error = s.withContext("applying " + action.kind + " on " +
                                  injectors::describe(action.target.target));
    }
  };
  auto detailOf = [&](const PlannedAction& action) {
    json detail = actionJson(action);
    detail["params"] = action.params;
    detail["scheduled_ms"] = scheduled_ms;
    return detail;
  };
  auto opened = [&](int step, double t) {
    auto [window, fresh] = windows_.try_emplace(step, t, t);
    if (!fresh) window->second.first = std::min(window->second.first, t);
  };

  last_in_force_ms_ = msNow();  // joins and failures only: the instant's own time
  std::vector<Call> calls;
  for (size_t index : indices) {
    const PlannedAction& action = plan[index];
    auto pattern = patternFor(action);
    if (!pattern.isOk()) {
      fail(action, detailOf(action), pattern.status());
      continue;
    }
    Pattern& p = **pattern;
    p.remaining = std::max(0, p.remaining - 1);
    const std::string key = stackKey(action);
    if (auto it = stacks_.find(key); it != stacks_.end()) {
      Stack& stack = it->second;
      if (stack.base.kind != action.kind ||
          kindTraits(action.kind).composition != Composition::kStacks) {
        // Validation refuses such plans; a fabric changed under a queued run can still get here.
        fail(action, detailOf(action),
             Status(StatusCode::kUnprocessable,
                    "steps[" + std::to_string(action.step) + "] (" + action.kind +
                        ") overlaps steps[" + std::to_string(stack.base.step) + "] (" +
                        stack.base.kind + ") on " + describeTarget(action.target) +
                        ", and the two cannot compose"));
        continue;
      }
      if (stack.members.empty()) {
        // Its restore failed, so it is still faulted; apply again all the same, so that the
        // effect is certainly in force for this window (apply is idempotent).
        stack.members[index] = action.step;
        stack.retry_at_ns = 0;
        calls.push_back({index, key});
        continue;
      }
      std::vector<int> held_by;
      for (const auto& [i, step] : stack.members) held_by.push_back(step);
      stack.members[index] = action.step;
      opened(action.step, msNow());
      json detail = detailOf(action);
      detail["stacked_on"] = held_by;
      detail["journal_id"] = p.journal_id;
      event("fault_applied", std::move(detail));
      continue;
    }
    Stack stack;
    stack.seq = next_seq_++;
    stack.health_due_ns = deps_.clock->nowNs() + kHealthPeriodMs * 1000000;
    stack.base = action;
    stack.fault = faultFor(action);
    stack.pattern = patternKey(action);
    stack.members[index] = action.step;
    stacks_[key] = std::move(stack);
    calls.push_back({index, key});
  }
  updateCount();

  const std::vector<Outcome> outcomes = callAgents(calls, scheduled_ms);
  if (deps_.progressed) deps_.progressed();
  for (size_t i = 0; i < calls.size(); ++i) {
    const PlannedAction& action = plan[calls[i].index];
    Pattern& pattern = patterns_.at(stacks_.at(calls[i].stack).pattern);
    json detail = detailOf(action);
    detail["delivery"] = outcomes[i].scheduled ? "scheduled" : "at_once";
    // How far ahead of its instant the agent had it: negative, it came late and was applied on
    // arrival, out of step with the others.
    if (outcomes[i].scheduled) detail["ahead_ms"] = scheduled_ms - outcomes[i].delivered_ms;
    if (!outcomes[i].status.isOk()) {
      // Half-applied, perhaps: the stack stays so that revertAll() takes it back.
      fail(action, std::move(detail), outcomes[i].status);
      continue;
    }
    mark(pattern, "applied");
    opened(action.step, outcomes[i].in_force_ms);
    last_in_force_ms_ = std::max(last_in_force_ms_, outcomes[i].in_force_ms);
    detail["journal_id"] = pattern.journal_id;
    detail["in_force_ms"] = outcomes[i].in_force_ms;
    event("fault_applied", std::move(detail));
  }
  return first_error;
}

std::vector<Status> FaultTimeline::runIndexed(const std::vector<size_t>& which,
                                              const std::function<Status(size_t)>& call) {
  std::vector<std::function<Status()>> batch;
  batch.reserve(which.size());
  for (size_t i : which) batch.push_back([&call, i] { return call(i); });
  return calls_.run(batch);
}

std::vector<FaultTimeline::Outcome> FaultTimeline::callAgents(const std::vector<Call>& calls,
                                                              double scheduled_ms) {
  std::vector<Outcome> outcomes(calls.size());
  std::vector<size_t> on_schedule;
  std::vector<size_t> at_once;
  for (size_t i = 0; i < calls.size(); ++i) {
    const Stack& stack = stacks_.at(calls[i].stack);
    const bool scheduled = patterns_.at(stack.pattern).agent->appliesOnSchedule();
    outcomes[i].scheduled = scheduled;
    (scheduled ? on_schedule : at_once).push_back(i);
  }
  if (!handsOutAhead(on_schedule.size())) {
    for (size_t i : on_schedule) outcomes[i].scheduled = false;
    at_once.insert(at_once.end(), on_schedule.begin(), on_schedule.end());
    on_schedule.clear();
  }
  auto agentOf = [&](size_t i) { return patterns_.at(stacks_.at(calls[i].stack).pattern).agent; };
  auto faultOf = [&](size_t i) -> const injectors::Fault& {
    return stacks_.at(calls[i].stack).fault;
  };
  const int64_t at_ns = deps_.origin_ns + static_cast<int64_t>(scheduled_ms * 1e6);

  // 1. Hand the scheduled ones out: each agent holds its fault before the instant.
  std::vector<size_t> delivered;
  if (!on_schedule.empty()) {
    const int64_t started_ns = deps_.clock->nowNs();
    const std::vector<Status> results = runIndexed(on_schedule, [&](size_t i) {
      Status s = agentOf(i)->scheduleFault(faultOf(i), at_ns);
      outcomes[i].delivered_ms = msNow();
      return s;
    });
    timedDelivery(started_ns, on_schedule.size());
    for (size_t k = 0; k < on_schedule.size(); ++k) {
      const size_t i = on_schedule[k];
      if (results[k].isOk()) {
        delivered.push_back(i);
        continue;
      }
      // Not handed over (an agent without scheduled applies, a lost answer): applied at the
      // instant instead, which reports the error again if it is the fault's own.
      core::logWarn("run " + std::to_string(deps_.run_id) + ": handing " +
                    injectors::describe(faultOf(i)) + " over ahead of its instant failed (" +
                    results[k].message() + "); applying it at the instant");
      outcomes[i].scheduled = false;
      at_once.push_back(i);
    }
    if (deps_.progressed) deps_.progressed();
  }
  // 2. The instant: call the others now.
  if (deps_.clock->nowNs() < at_ns) deps_.clock->sleepUntilNs(at_ns);
  if (!at_once.empty()) {
    const std::vector<Status> results =
        runIndexed(at_once, [&](size_t i) { return agentOf(i)->applyFault(faultOf(i)); });
    const double t = msNow();
    for (size_t k = 0; k < at_once.size(); ++k) {
      outcomes[at_once[k]].status = results[k];
      outcomes[at_once[k]].in_force_ms = t;
    }
  }
  // 3. Confirm the scheduled ones, with when each agent applied its fault.
  if (!delivered.empty()) {
    const int64_t deadline_ns = std::max(at_ns, deps_.clock->nowNs()) + kConfirmTimeoutMs * 1000000;
    std::vector<int64_t> applied_ns(calls.size(), 0);
    const std::vector<Status> results = runIndexed(delivered, [&](size_t i) -> Status {
      auto applied = agentOf(i)->awaitScheduled(faultOf(i), deadline_ns);
      if (!applied.isOk()) return applied.status();
      applied_ns[i] = applied.value();
      return Status::ok();
    });
    for (size_t k = 0; k < delivered.size(); ++k) {
      Outcome& outcome = outcomes[delivered[k]];
      outcome.status = results[k];
      outcome.in_force_ms = static_cast<double>(applied_ns[delivered[k]] - deps_.origin_ns) / 1e6;
    }
  }
  return outcomes;
}

namespace {
// Up quickly, down slowly: a lead too short makes faults late, one too long only waits.
void followTimings(double& estimate, double measured) {
  const double weight = measured > estimate ? 0.5 : 0.1;
  estimate += weight * (measured - estimate);
}
}  // namespace

void FaultTimeline::timedCapture(int64_t started_ns) {
  const double ms = static_cast<double>(deps_.clock->nowNs() - started_ns) / 1e6;
  if (capture_ms_ == 0) {
    capture_ms_ = ms;
  } else {
    followTimings(capture_ms_, ms);
  }
}

void FaultTimeline::timedDelivery(int64_t started_ns, size_t parallel) {
  const double width = static_cast<double>(calls_.workers() + 1);
  const double waves = std::ceil(static_cast<double>(std::max<size_t>(1, parallel)) / width);
  const double per_call_ms = static_cast<double>(deps_.clock->nowNs() - started_ns) / 1e6 / waves;
  if (!delivery_timed_) {
    delivery_ms_ = std::max(per_call_ms, deliveryCallMs() / 2);
    delivery_timed_ = true;
    return;
  }
  followTimings(delivery_ms_, per_call_ms);
}

double FaultTimeline::deliveryCallMs() const {
  if (delivery_timed_) return delivery_ms_;
  return std::max(kUntimedDeliveryMs, 2 * capture_ms_);
}

bool FaultTimeline::handsOutAhead(size_t agents) const {
  if (agents == 0) return false;
  const size_t above = deps_.schedule_above_agents >= 0
                           ? static_cast<size_t>(deps_.schedule_above_agents)
                           : ConcurrentCalls::kMaxWorkers + 1;
  return agents > above;
}

double FaultTimeline::leadMs(const std::vector<size_t>& indices,
                             const std::vector<PlannedAction>& plan) const {
  size_t scheduled = 0;
  for (size_t index : indices) {
    auto it = patterns_.find(patternKey(plan[index]));
    if (it != patterns_.end() && it->second.agent != nullptr &&
        it->second.agent->appliesOnSchedule()) {
      ++scheduled;
    }
  }
  if (scheduled == 0 || !handsOutAhead(scheduled)) return 0;
  // The deliveries go out calls_.workers() + 1 at a time; three times their expected time, plus
  // a margin for the agents' timers and the run thread's own wake-up.
  const double width = static_cast<double>(calls_.workers() + 1);
  const double waves = std::ceil(static_cast<double>(scheduled) / width);
  return std::clamp(kMinLeadMs + 3 * waves * deliveryCallMs(), kMinLeadMs, kMaxLeadMs);
}

void FaultTimeline::revert(const std::vector<size_t>& indices, const std::string& why,
                           double scheduled_ms, bool urgent) {
  std::vector<std::string> to_restore;
  std::map<std::string, std::vector<int>> ending;  // stack to restore -> the steps it ends
  auto closeWindow = [&](int step, double t) {
    if (auto window = windows_.find(step); window != windows_.end()) {
      window->second.second = std::max(window->second.second, t);
    }
  };
  // Called ahead of a scheduled instant (leadMs), a step whose resource stays held still
  // ends at the instant.
  const double instant_ms = scheduled_ms >= 0 ? std::max(msNow(), scheduled_ms) : msNow();
  for (size_t index : indices) {
    std::string key;
    Stack* stack = holding(index, &key);
    if (stack == nullptr) continue;
    const int step = stack->members[index];
    stack->members.erase(index);
    if (stack->members.empty()) {
      to_restore.push_back(key);
      ending[key].push_back(step);
      continue;
    }
    closeWindow(step, instant_ms);
    // Another fault still holds the resource: its state stays until the last one ends.
    std::vector<int> held_by;
    for (const auto& [i, s] : stack->members) held_by.push_back(s);
    PlannedAction ended = stack->base;
    ended.step = step;
    json detail = actionJson(ended);
    detail["reason"] = why;
    detail["restored"] = false;
    detail["still_held_by"] = held_by;
    if (scheduled_ms >= 0) detail["scheduled_ms"] = scheduled_ms;
    event("fault_reverted", std::move(detail));
  }
  const std::map<std::string, double> ended = restore(to_restore, why, scheduled_ms, urgent);
  for (const auto& [key, steps] : ending) {
    for (int step : steps) closeWindow(step, ended.at(key));
  }
}

std::map<std::string, double> FaultTimeline::restore(const std::vector<std::string>& keys,
                                                     const std::string& why, double scheduled_ms,
                                                     bool urgent) {
  std::map<std::string, double> ended;
  if (keys.empty()) return ended;
  std::vector<json> observed(keys.size(), json::object());
  std::vector<Status> results(keys.size());
  std::vector<double> restored_ms(keys.size(), 0);
  std::vector<bool> on_schedule(keys.size(), false);
  auto stackOf = [&](size_t i) -> const Stack& { return stacks_.at(keys[i]); };
  auto patternOf = [&](size_t i) -> const Pattern& { return patterns_.at(stackOf(i).pattern); };
  auto runEach = [&](const std::vector<size_t>& which, const std::function<Status(size_t)>& call) {
    const std::vector<Status> statuses = runIndexed(which, call);
    for (size_t k = 0; k < which.size(); ++k) results[which[k]] = statuses[k];
  };

  // 1. A planned revert on agents that revert on schedule: hand them the instant first. Urgent
  //    reverts (a stop, the run's end) and retries go out at once.
  std::vector<size_t> scheduled;
  std::vector<size_t> at_once;
  const bool plannable = scheduled_ms >= 0 && !urgent;
  for (size_t i = 0; i < keys.size(); ++i) {
    (plannable && patternOf(i).agent->appliesOnSchedule() ? scheduled : at_once).push_back(i);
  }
  if (!handsOutAhead(scheduled.size())) {
    at_once.insert(at_once.end(), scheduled.begin(), scheduled.end());
    scheduled.clear();
  }
  const int64_t at_ns = deps_.origin_ns + static_cast<int64_t>(scheduled_ms * 1e6);
  if (!scheduled.empty()) {
    const int64_t started_ns = deps_.clock->nowNs();
    runEach(scheduled,
            [&](size_t i) { return patternOf(i).agent->scheduleRevert(stackOf(i).fault, at_ns); });
    timedDelivery(started_ns, scheduled.size());
    std::vector<size_t> held;
    for (size_t i : scheduled) {
      if (results[i].isOk()) {
        held.push_back(i);
        on_schedule[i] = true;
      } else {
        // Not handed over (an older agent, a lost answer): reverted at the instant instead.
        core::logWarn("run " + std::to_string(deps_.run_id) + ": scheduling the revert of " +
                      stackOf(i).base.kind + " on " + describeTarget(stackOf(i).base.target) +
                      " failed (" + results[i].message() + "); reverting it at the instant");
        at_once.push_back(i);
      }
    }
    scheduled = std::move(held);
    if (deps_.progressed) deps_.progressed();
  }
  // 2. The instant: observe and revert the others.
  if (scheduled_ms >= 0 && deps_.clock->nowNs() < at_ns) deps_.clock->sleepUntilNs(at_ns);
  runEach(at_once, [&](size_t i) {
    const Pattern& pattern = patternOf(i);
    if (!urgent) {
      if (auto o = pattern.agent->observeFault(stackOf(i).fault); o.isOk()) observed[i] = o.value();
    }
    return pattern.agent->revertFault(stackOf(i).fault, pattern.prior);
  });
  const double at_once_ms = msNow();
  for (size_t i : at_once) restored_ms[i] = at_once_ms;
  // 3. Confirm the scheduled ones, with when each agent reverted and what it saw just before.
  if (!scheduled.empty()) {
    const int64_t deadline_ns = std::max(at_ns, deps_.clock->nowNs()) + kConfirmTimeoutMs * 1000000;
    std::vector<agent::Agent::RevertedFault> done(keys.size());
    runEach(scheduled, [&](size_t i) -> Status {
      auto reverted = patternOf(i).agent->awaitReverted(stackOf(i).fault, deadline_ns);
      if (!reverted.isOk()) return reverted.status();
      done[i] = reverted.value();
      return Status::ok();
    });
    for (size_t i : scheduled) {
      observed[i] = done[i].observed;
      restored_ms[i] = results[i].isOk()
                           ? static_cast<double>(done[i].reverted_at_ns - deps_.origin_ns) / 1e6
                           : msNow();
    }
  }
  if (deps_.progressed) deps_.progressed();

  for (size_t i = 0; i < keys.size(); ++i) {
    Stack& stack = stacks_.at(keys[i]);
    Pattern& pattern = patterns_.at(stack.pattern);
    ended[keys[i]] = restored_ms[i];
    json detail = actionJson(stack.base);
    detail["reason"] = why;
    detail["observed"] = observed[i];
    detail["journal_id"] = pattern.journal_id;
    if (scheduled_ms >= 0) detail["scheduled_ms"] = scheduled_ms;
    detail["delivery"] = on_schedule[i] ? "scheduled" : "at_once";
    if (!results[i].isOk()) {
      ++stack.attempts;
      const int64_t delay_ms = revertRetryDelayMs(stack.attempts);
      stack.retry_at_ns = deps_.clock->nowNs() + delay_ms * 1000000;
      stack.last_error = results[i].message();
      detail["error"] = results[i].message();
      detail["attempt"] = stack.attempts;
      detail["retry_in_ms"] = delay_ms;
      event("revert_error", std::move(detail));
      core::logError("run " + std::to_string(deps_.run_id) + ": revert of " + stack.base.kind +
                     " on " + describeTarget(stack.base.target) + " failed (attempt " +
                     std::to_string(stack.attempts) + "): " + results[i].toString());
      mark(pattern, "failed");
      continue;
    }
    // The pattern's entry stays open while later phases are planned on it.
    mark(pattern, pattern.remaining == 0 ? "reverted" : "applied");
    detail["restored"] = true;
    detail["attempts"] = stack.attempts + 1;
    detail["out_of_force_ms"] = restored_ms[i];
    event("fault_reverted", std::move(detail));
    stacks_.erase(keys[i]);
  }
  updateCount();
  return ended;
}

void FaultTimeline::retryDue() {
  const int64_t now = deps_.clock->nowNs();
  std::vector<std::string> due;
  for (const auto& [key, stack] : stacks_) {
    if (stack.members.empty() && stack.retry_at_ns != 0 && stack.retry_at_ns <= now) {
      due.push_back(key);
    }
  }
  restore(due, "retry", -1, false);
}

void FaultTimeline::recordTrafficTelemetry(const PlannedAction& action, const json& observed) {
  if (deps_.recorder == nullptr) return;
  const TrafficHosts hosts = trafficHostsOf(action.target);
  if (hosts.sources.empty() && hosts.sink.empty()) return;  // not a traffic fault
  deps_.recorder->telemetry(
      deps_.run_id, trafficTelemetry(observed, action.kind, hosts.sources, hosts.sink, msNow()));
}

void FaultTimeline::checkHealth(int64_t quiet_until_ns) {
  const int64_t now = deps_.clock->nowNs();
  if (quiet_until_ns - now < kHealthPeriodMs * 1000000 / 10) return;
  for (auto& [key, stack] : stacks_) {
    if (stack.members.empty() || stack.unhealthy || now < stack.health_due_ns ||
        !kindTraits(stack.base.kind).long_running) {
      continue;
    }
    stack.health_due_ns = now + kHealthPeriodMs * 1000000;
    const Pattern& pattern = patterns_.at(stack.pattern);
    auto observed = pattern.agent->observeFault(stack.fault);
    if (!observed.isOk()) continue;
    recordTrafficTelemetry(stack.base, *observed);
    if (observed->value("running", true)) continue;
    stack.unhealthy = true;
    json detail = actionJson(stack.base);
    detail["observed"] = *observed;
    detail["journal_id"] = pattern.journal_id;
    std::string error = "the emitter of " + stack.base.kind + " on " +
                        describeTarget(stack.base.target) + " stopped before its window ended";
    if (observed->contains("exit_code")) {
      error += " (status " + observed->at("exit_code").dump() + ")";
    }
    if (observed->contains("log")) error += ": " + observed->value("log", "");
    detail["error"] = error;
    core::logWarn("run " + std::to_string(deps_.run_id) + ": " + error);
    event("fault_unhealthy", std::move(detail));
  }
}

std::optional<int64_t> FaultTimeline::nextRetryNs() const {
  std::optional<int64_t> next;
  for (const auto& [key, stack] : stacks_) {
    if (!stack.members.empty() || stack.retry_at_ns == 0) continue;
    if (!next || stack.retry_at_ns < *next) next = stack.retry_at_ns;
  }
  return next;
}

int FaultTimeline::revertAll(const std::string& why, int64_t give_up_ns) {
  const double now_ms = msNow();
  std::vector<std::pair<uint64_t, std::string>> order;
  for (auto& [key, stack] : stacks_) {
    for (const auto& [index, step] : stack.members) {
      if (auto window = windows_.find(step); window != windows_.end()) {
        window->second.second = std::max(window->second.second, now_ms);
      }
    }
    stack.members.clear();
    order.emplace_back(stack.seq, key);
  }
  // Nothing more is applied: a pattern's entry closes with its last restore.
  for (auto& [key, pattern] : patterns_) pattern.remaining = 0;
  std::sort(order.rbegin(), order.rend());  // newest first
  const size_t before = stacks_.size();
  for (const auto& [seq, key] : order) restore({key}, why, -1, true);
  while (!stacks_.empty()) {
    auto next = nextRetryNs();
    if (!next || *next > give_up_ns) break;
    deps_.clock->sleepUntilNs(*next);
    retryDue();
  }
  // Entries journaled for phases that never came (an early stop) were never applied.
  std::set<std::string> still_held;
  for (const auto& [key, stack] : stacks_) still_held.insert(stack.pattern);
  for (auto& [key, pattern] : patterns_) {
    if (still_held.count(key) == 0) mark(pattern, "reverted");
  }
  return static_cast<int>(before - stacks_.size());
}

std::vector<LeftFault> FaultTimeline::left() const {
  std::vector<const Stack*> ordered;
  for (const auto& [key, stack] : stacks_) ordered.push_back(&stack);
  std::sort(ordered.begin(), ordered.end(),
            [](const Stack* a, const Stack* b) { return a->seq > b->seq; });
  std::vector<LeftFault> out;
  for (const Stack* stack : ordered) {
    out.push_back({stack->base.kind, stack->base.target, patterns_.at(stack->pattern).journal_id,
                   stack->attempts, stack->last_error});
  }
  return out;
}

}  // namespace fabric_chaos::scenarios
