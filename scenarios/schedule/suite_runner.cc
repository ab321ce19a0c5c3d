#include "scenarios/schedule/suite_runner.h"

#include <chrono>
#include <string_view>
#include <utility>
#include <vector>

#include "core/log.h"
#include "core/run_state.h"

namespace fabric_chaos::scenarios::schedule {
namespace {

using core::Result;
using core::Status;
using core::StatusCode;
using nlohmann::json;

std::vector<std::string> scenarioNames(const json& suite) {
  std::vector<std::string> out;
  auto it = suite.find("scenarios");
  if (it == suite.end() || !it->is_array()) return out;
  for (const json& name : *it) {
    if (name.is_string()) out.push_back(name.get<std::string>());
  }
  return out;
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& part : parts) {
    if (!out.empty()) out += "; ";
    out += part;
  }
  return out;
}

}  // namespace

SuiteRunner::SuiteRunner(SuiteRunnerDeps deps, SuiteRunnerOptions options)
    : deps_(std::move(deps)), options_(options) {}

SuiteRunner::~SuiteRunner() { shutdown(); }

Result<int64_t> SuiteRunner::submitSuite(const std::string& suite_name, const json& suite,
                                         const std::string& fabric) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return Status(StatusCode::kUnavailable, "server is shutting down");
  }
  std::string resolved = fabric;
  if (resolved.empty()) {
    if (auto f = suite.find("fabric"); f != suite.end() && f->is_string()) {
      resolved = f->get<std::string>();
    }
  }
  auto id = deps_.store->createSuiteRun(suite_name, suite, resolved);
  if (!id.isOk()) return id.status();

  std::lock_guard lock(mu_);
  if (stopping_) {
    // shutdown() began meanwhile and will not join a worker started now.
    (void)deps_.store->setSuiteRunState(*id, "interrupted", "serve stopped before it started");
    return Status(StatusCode::kUnavailable, "server is shutting down");
  }
  reapFinished();
  Worker& worker = workers_[*id];
  worker.thread = std::thread(&SuiteRunner::work, this, *id, suite, resolved);
  return *id;
}

Status SuiteRunner::abortSuite(int64_t suite_run_id) {
  const std::string name = "suite run " + std::to_string(suite_run_id);
  std::unique_lock lock(mu_);
  auto it = workers_.find(suite_run_id);
  if (it == workers_.end() || it->second.done) {
    // Not running here: a worker writes its verdict under mu_, so the store now holds it.
    auto record = deps_.store->getSuiteRun(suite_run_id);
    if (!record.isOk()) return record.status();
    if (core::isFinalRunState(record->state)) {
      return Status(StatusCode::kFailedPrecondition,
                    name + " already finished (" + record->state + ")");
    }
    // Unfinished but with no worker (cannot happen after interruptUnfinishedSuiteRuns at
    // start-up, but an abort must never leave it running forever).
    return deps_.store->setSuiteRunState(suite_run_id, "aborted", "aborted by request");
  }
  Worker& worker = it->second;
  if (worker.abort_requested) return Status::ok();  // a second abort is the same request
  worker.abort_requested = true;
  const int64_t run = worker.current_run;
  lock.unlock();
  cv_.notify_all();
  if (run != 0) {
    Status status = deps_.runs->abort(run);
    // The run may have just finished on its own; the worker sees that and stops all the same.
    if (!status.isOk() && status.code() != StatusCode::kFailedPrecondition &&
        status.code() != StatusCode::kNotFound) {
      return status.withContext("abort " + name);
    }
  }
  return Status::ok();
}

void SuiteRunner::shutdown() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (auto& [id, worker] : workers_) {
      if (worker.thread.joinable()) threads.push_back(std::move(worker.thread));
    }
  }
  cv_.notify_all();
  for (std::thread& t : threads) t.join();
}

bool SuiteRunner::waitIdle(int64_t timeout_ms) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [this] {
    for (const auto& [id, worker] : workers_) {
      if (!worker.done) return false;
    }
    return true;
  });
}

void SuiteRunner::reapFinished() {
  for (auto it = workers_.begin(); it != workers_.end();) {
    // done is set as the worker's last act, so join() returns at once.
    if (it->second.done && it->second.thread.joinable()) {
      it->second.thread.join();
      it = workers_.erase(it);
    } else {
      ++it;
    }
  }
}

bool SuiteRunner::stopRequested(int64_t id) {
  std::lock_guard lock(mu_);
  return stopping_ || workers_[id].abort_requested;
}

void SuiteRunner::work(int64_t id, json suite, std::string fabric) {
  const std::string name = "suite run " + std::to_string(id);
  const std::vector<std::string> scenarios = scenarioNames(suite);
  bool stop_on_failure = false;
  if (auto it = suite.find("stop_on_failure"); it != suite.end() && it->is_boolean()) {
    stop_on_failure = it->get<bool>();
  }

  std::vector<std::string> problems;
  int passed = 0, failed = 0, aborted = 0, errored = 0;
  size_t finished = 0;
  bool stopped = false;  // shutdown or abort cut it short
  if (Status st = deps_.store->setSuiteRunState(id, "running", ""); !st.isOk()) {
    core::logWarn(name + ": " + st.toString());
    stopped = true;
  }
  if (scenarios.empty()) {
    problems.push_back("the suite has no scenarios");
    ++errored;
  }
  for (size_t i = 0; i < scenarios.size() && !stopped; ++i) {
    if (stopRequested(id)) {
      stopped = true;
      break;
    }
    int64_t run_id = 0;
    std::string error;
    const std::string state = runScenario(id, scenarios[i], fabric, &run_id, &error);
    if (state.empty()) {  // shutdown while waiting for the run
      stopped = true;
      break;
    }
    ++finished;
    if (state == "passed") {
      ++passed;
      continue;
    }
    problems.push_back(error);
    if (state == "failed") {
      ++failed;
    } else if (state == "aborted") {
      ++aborted;
    } else {
      ++errored;
    }
    if (stop_on_failure && i + 1 < scenarios.size()) {
      problems.push_back("stop_on_failure: skipped " + std::to_string(scenarios.size() - i - 1) +
                         " scenario(s)");
      break;
    }
  }

  // The verdict is written under mu_ so that abortSuite never sees a finished worker whose
  // suite run still looks unfinished in the store.
  std::lock_guard lock(mu_);
  Worker& worker = workers_[id];
  std::string verdict;
  if (stopping_ && stopped) {
    verdict = "interrupted";
    problems.push_back("serve stopped while the suite run was running");
  } else if (worker.abort_requested) {
    verdict = "aborted";
    problems.push_back("aborted by request");
    if (finished < scenarios.size()) {
      problems.push_back("skipped " + std::to_string(scenarios.size() - finished) + " scenario(s)");
    }
  } else if (failed > 0) {
    verdict = "failed";
  } else if (aborted > 0) {
    verdict = "aborted";
  } else if (errored > 0 || passed != static_cast<int>(scenarios.size())) {
    verdict = "error";
  } else {
    verdict = "passed";
  }
  if (Status st = deps_.store->setSuiteRunState(id, verdict, join(problems)); !st.isOk()) {
    core::logWarn(name + ": cannot store verdict " + verdict + ": " + st.toString());
  } else {
    core::logInfo(name + " (" + suite.value("name", std::string()) + ") " + verdict);
  }
  worker.current_run = 0;
  worker.done = true;
  cv_.notify_all();
}

std::string SuiteRunner::runScenario(int64_t id, const std::string& name, const std::string& fabric,
                                     int64_t* run_id, std::string* error) {
  const std::string what = "scenario " + name;
  auto run = submitStoredScenario(deps_, name, fabric);
  if (!run.isOk()) {
    *error = run.status().message();
    return "error";
  }
  *run_id = *run;
  // The run summary's suite_run_id (docs/api.md) comes from this attribute.
  for (Status st : {deps_.store->appendSuiteRunRun(id, *run),
                    deps_.store->setRunAttribute(*run, "suite_run_id", id)}) {
    if (!st.isOk()) core::logWarn("suite run " + std::to_string(id) + ": " + st.toString());
  }
  bool abort_now = false;
  {
    std::lock_guard lock(mu_);
    Worker& worker = workers_[id];
    worker.current_run = *run;
    // An abort that arrived between the check before this scenario and now found no run to
    // abort: abort this one.
    abort_now = worker.abort_requested;
  }
  if (abort_now) (void)deps_.runs->abort(*run);
  const std::string state = waitForRun(id, *run, error);
  if (!state.empty() && state != "passed" && error->empty()) {
    *error = what + ": run " + std::to_string(*run) + " " + state;
  }
  return state;
}

std::string SuiteRunner::waitForRun(int64_t id, int64_t run_id, std::string* error) {
  const auto interval = std::chrono::milliseconds(options_.poll_interval_ms);
  while (true) {
    auto run = deps_.store->getRun(run_id);
    if (run.isOk() && core::isFinalRunState(run->state)) {
      std::lock_guard lock(mu_);
      workers_[id].current_run = 0;
      if (run->state != "passed") {
        *error = "scenario " + run->scenario_name + ": run " + std::to_string(run_id) + " " +
                 run->state + (run->error.empty() ? "" : " (" + run->error + ")");
      }
      return run->state;
    }
    if (!run.isOk()) {
      if (run.status().code() == StatusCode::kNotFound) {
        *error = run.status().message();
        return "error";
      }
      // A transient store failure (busy, I/O): the run goes on; look again.
      core::logWarn("suite run " + std::to_string(id) + ": " + run.status().toString());
    }
    std::unique_lock lock(mu_);
    if (cv_.wait_for(lock, interval, [this] { return stopping_; })) return "";
  }
}

}  // namespace fabric_chaos::scenarios::schedule
