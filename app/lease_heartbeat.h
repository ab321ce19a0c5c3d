#pragma once
// Renews serve's lease with its guardian (app/guardian.h) every period_ms while healthy() says
// the engine is making progress. A wedged run (Engine::holdsFaultsWithoutProgress) or a process
// that no longer runs at all (deadlock, SIGSTOP) stops the beats, and the guardian kills serve
// and reverts its faults after the lease. Owns one thread; stop() and the destructor join it.

#include <cstdint>
#include <functional>

#include "core/periodic_task.h"

namespace fabric_chaos::app {

class LeaseHeartbeat {
 public:
  LeaseHeartbeat(int64_t period_ms, std::function<bool()> healthy, std::function<void()> beat)
      : task_(period_ms, [healthy = std::move(healthy), beat = std::move(beat)] {
          if (healthy()) beat();
        }) {}
  void stop() { task_.stop(); }

 private:
  core::PeriodicTask task_;
};

}  // namespace fabric_chaos::app
