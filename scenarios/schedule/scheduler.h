#pragma once
// The cron scheduler: a thread that once a second reads the schedules from the store and starts
// the scenario run or suite run of every enabled schedule whose next fire time has passed,
// recording the outcome ("run 12", "suite run 3" or the error) on the schedule. A failed start is
// recorded and not retried before the next fire time. Thread-safe; shutdown() joins the thread.
//
// Missed fires: the next fire time is computed from the last fire (or from the schedule's
// creation), so a schedule whose slots passed while serve was down fires once at start-up, not
// once per missed slot, and then follows its cron expression from that moment.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "scenarios/schedule/submit.h"
#include "scenarios/services.h"
#include "store/store.h"

namespace fabric_chaos::scenarios::schedule {

struct SchedulerDeps {
  SubmitDeps submit;                     // store, engine, fabrics, kinds, default fabric
  SuiteService* suites = nullptr;        // for schedules of suites
  std::function<int64_t()> wall_now_ms;  // Unix epoch ms; core::wallNowMs when unset
};

struct SchedulerOptions {
  int64_t tick_ms = 1000;
};

// When the schedule fires next (Unix epoch ms): the first cron time after its last fire, or
// after its creation when it never fired. nullopt when disabled or its cron does not parse.
std::optional<int64_t> scheduleNextFireMs(const store::ScheduleRecord& schedule);

class Scheduler {
 public:
  Scheduler(SchedulerDeps deps, SchedulerOptions options = {});
  ~Scheduler();  // shutdown()

  void start();
  void shutdown();  // idempotent

  // One pass at now_ms: fires every due schedule. Returns how many fired (successfully or not).
  // The thread calls this every tick; tests call it directly with a chosen time.
  int tick(int64_t now_ms);

 private:
  void loop();
  int64_t now();

  SchedulerDeps deps_;
  SchedulerOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace fabric_chaos::scenarios::schedule
