#pragma once
// A run's fabric telemetry, beside its samples, from the start of the baseline to the end of the
// run:
// - every 100 ms, each modelled switch of the run's fabric (SwitchTelemetry, scenarios/services.h);
// - every 500 ms, each RDMA host's port hw_counters, asked of its agent (Agent::rdmaCounters).
//   Slower than the switches because a VM lab guest answers on its one emulated vCPU, which the
//   workload's rank shares: each request is an iteration of the ring slowed by milliseconds, so
//   2 a second, not 10. The counters are cumulative: nothing is lost between readings.
// The switches are read on one thread, each RDMA host on a thread of its own, so that a slow guest
// leaves a gap in its own series only. Points are stamped with the run clock and stored in batches
// of about a second (Store::appendTelemetry); instants (core/telemetry.h) move to the run's clock
// (onRunClock), which must therefore be CLOCK_MONOTONIC, as core::SteadyClock is. A source that
// cannot be read is reported once (telemetry_error) and tried again every period; an RDMA host
// whose agent reports no RDMA port is not asked again. stop() stores what is left.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "agent/agent.h"
#include "core/clock.h"
#include "scenarios/services.h"
#include "store/store.h"

namespace fabric_chaos::scenarios {

// A fabric host whose RDMA counters the run samples, and the agent that reads them.
struct RdmaTelemetryHost {
  std::string host;
  agent::Agent* agent = nullptr;
};

// The fabric hosts whose agents can read their own RDMA ports (pure): each remote agent once
// (several fabric hosts behind one agent URL are one machine: the first host names it), and a
// host of the embedded agent only when it is the controller's own initial namespace. Lab hosts
// that are namespaces of this machine share its /sys, so their counters would be the machine's.
std::vector<Host> rdmaTelemetryHosts(const Fabric& fabric);

// One switch reading on the run's clock (pure): every point stamped t_ms, and instants
// (core::isInstantMetric), read as CLOCK_MONOTONIC nanoseconds, made run-relative microseconds
// from origin_ns on the same clock; an instant read as 0 (never) is left out.
std::vector<core::TelemetryPoint> onRunClock(std::vector<core::TelemetryPoint> points, double t_ms,
                                             int64_t origin_ns);

struct TelemetrySamplerDeps {
  store::Store* store = nullptr;
  SwitchTelemetry* source = nullptr;  // null: no switch telemetry
  core::Clock* clock = nullptr;       // stamps: ms since origin_ns on this clock
  int64_t run_id = 0;
  int64_t origin_ns = 0;
  // Run events ("telemetry_error", "telemetry_resumed"); called from the sampler's threads.
  std::function<void(const std::string& kind, nlohmann::json detail)> event;
  std::vector<RdmaTelemetryHost> rdma_hosts = {};
};

class TelemetrySampler {
 public:
  static constexpr int64_t kPeriodMs = 100;
  static constexpr int64_t kRdmaPeriodMs = 500;
  static constexpr int64_t kStorePeriodMs = 1000;

  // Samples the switches of `fabric` that have a modelled egress, and deps.rdma_hosts.
  TelemetrySampler(TelemetrySamplerDeps deps, const Fabric& fabric);
  ~TelemetrySampler();
  TelemetrySampler(const TelemetrySampler&) = delete;
  TelemetrySampler& operator=(const TelemetrySampler&) = delete;

  void start();
  // Joins the threads and stores the points not yet stored. Idempotent.
  void stop();
  // One reading of every switch, stamped now, kept for the next store (the switch thread's tick).
  void sampleOnce();
  // One reading of RDMA host i (its thread's tick); false once the host is known to have no
  // RDMA port, so that it is not asked again.
  bool sampleRdmaOnce(size_t i);
  // Stores the kept points.
  void storePending();
  bool samplesAnything() const { return !switches_.empty() || !deps_.rdma_hosts.empty(); }

 private:
  // Calls tick every period_ms until stop() or until tick returns false; stores the kept points
  // when kStorePeriodMs has passed since the last store.
  void every(int64_t period_ms, const std::function<bool()>& tick);
  void keep(std::vector<core::TelemetryPoint> points);
  // Reports a source's first failure and its first success after failures, once each.
  void noteHealth(const std::string& key, const nlohmann::json& who, const core::Status& status);
  double runMs();

  TelemetrySamplerDeps deps_;
  std::vector<Switch> switches_;
  std::mutex mu_;  // everything below
  std::vector<core::TelemetryPoint> pending_;
  std::set<std::string> failing_;  // sources whose error was reported
  int64_t last_store_ns_ = 0;
  bool stopping_ = false;
  std::condition_variable cv_;
  std::vector<std::thread> threads_;
};

}  // namespace fabric_chaos::scenarios
