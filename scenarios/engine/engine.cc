#include "scenarios/engine/engine.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/log.h"
#include "core/run_state.h"
#include "scenarios/engine/run_execution.h"

namespace fabric_chaos::scenarios {

using core::RunState;
using core::Status;
using core::StatusCode;
using nlohmann::json;

Engine::Engine(EngineDeps deps, EngineOptions options)
    : deps_(deps), options_(std::move(options)), locks_(options_.max_parallel_runs) {}

Engine::~Engine() { shutdown(); }

core::Result<StartupRecovery> Engine::recoverAtStartup() {
  return scenarios::recoverAtStartup(*deps_.store, *deps_.agents);
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
    } else if (auto slot = running_.find(run_id); slot != running_.end() && !slot->second.done &&
                                                  !slot->second.execution->finished()) {
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
  // The run decided its final state; the store may not have it yet.
  auto latest = deps_.store->getRun(run_id);
  const std::string state = latest.isOk() ? latest->state : record->state;
  return Status(StatusCode::kFailedPrecondition,
                "run " + std::to_string(run_id) +
                    (core::isFinalRunState(state) ? " has already finished (" + state + ")"
                                                  : " is already ending"));
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
  return revertJournalEntry(*deps_.store, *deps_.agents, *entry,
                            "operator (POST /v1/faults/" + std::to_string(journal_id) + "/revert)");
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
  slot.execution = std::make_unique<RunExecution>(deps_, options_, run_id, slot.port);
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
