#include "scenarios/schedule/scheduler.h"

#include <chrono>
#include <string>
#include <utility>

#include "core/clock.h"
#include "core/log.h"
#include "scenarios/schedule/cron.h"

namespace fabric_chaos::scenarios::schedule {

std::optional<int64_t> scheduleNextFireMs(const store::ScheduleRecord& schedule) {
  if (!schedule.enabled) return std::nullopt;
  auto spec = parseCron(schedule.cron);
  if (!spec.isOk()) return std::nullopt;
  const int64_t base = schedule.last_fired_ms > 0 ? schedule.last_fired_ms : schedule.created_ms;
  const int64_t next = nextFire(*spec, base);
  if (next < 0) return std::nullopt;
  return next;
}

Scheduler::Scheduler(SchedulerDeps deps, SchedulerOptions options)
    : deps_(std::move(deps)), options_(options) {}

Scheduler::~Scheduler() { shutdown(); }

void Scheduler::start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread(&Scheduler::loop, this);
}

void Scheduler::shutdown() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

int64_t Scheduler::now() { return deps_.wall_now_ms ? deps_.wall_now_ms() : core::wallNowMs(); }

void Scheduler::loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    tick(now());
    lock.lock();
    cv_.wait_for(lock, std::chrono::milliseconds(options_.tick_ms), [this] { return stopping_; });
  }
}

int Scheduler::tick(int64_t now_ms) {
  auto schedules = deps_.submit.store->listSchedules();
  if (!schedules.isOk()) {
    core::logWarn("scheduler: " + schedules.status().toString());
    return 0;
  }
  int fired = 0;
  for (const store::ScheduleRecord& schedule : *schedules) {
    const std::optional<int64_t> due = scheduleNextFireMs(schedule);
    if (!due || *due > now_ms) continue;
    const std::string name = "schedule " + std::to_string(schedule.id);
    std::string result;
    if (!schedule.scenario.empty()) {
      auto run = submitStoredScenario(deps_.submit, schedule.scenario, schedule.fabric);
      result = run.isOk() ? "run " + std::to_string(*run) : run.status().message();
    } else if (deps_.suites == nullptr) {
      result = "suite " + schedule.suite + ": suites are not available";
    } else {
      auto suite = deps_.submit.store->getSuite(schedule.suite);
      if (!suite.isOk()) {
        result = suite.status().message();
      } else {
        auto run = deps_.suites->submitSuite(schedule.suite, suite->document, schedule.fabric);
        result = run.isOk() ? "suite run " + std::to_string(*run)
                            : "suite " + schedule.suite + ": " + run.status().message();
      }
    }
    core::logInfo(name + " (" + schedule.cron + ") fired: " + result);
    // Marked even when the start failed: the error is shown on the schedule, and the next try is
    // at the next fire time rather than every tick.
    if (core::Status st = deps_.submit.store->markScheduleFired(schedule.id, now_ms, result);
        !st.isOk()) {
      core::logWarn("scheduler: " + st.toString());
    }
    ++fired;
  }
  return fired;
}

}  // namespace fabric_chaos::scenarios::schedule
