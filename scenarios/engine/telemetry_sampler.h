#pragma once
// A run's switch telemetry: every 100 ms, on a thread of its own, reads each modelled switch of
// the run's fabric (SwitchTelemetry, scenarios/services.h), stamps the points with the run clock
// and stores them in batches of about a second (Store::appendTelemetry), beside the samples. A
// switch that cannot be read is reported once (telemetry_error) and tried again at every tick.
// It runs from the start of the baseline to the end of the run; stop() stores what is left.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "scenarios/services.h"
#include "store/store.h"

namespace fabric_chaos::scenarios {

struct TelemetrySamplerDeps {
  store::Store* store = nullptr;
  SwitchTelemetry* source = nullptr;
  core::Clock* clock = nullptr;  // stamps: ms since origin_ns on this clock
  int64_t run_id = 0;
  int64_t origin_ns = 0;
  // Run events ("telemetry_error"); called from the sampler's thread.
  std::function<void(const std::string& kind, nlohmann::json detail)> event;
};

class TelemetrySampler {
 public:
  static constexpr int64_t kPeriodMs = 100;
  static constexpr int kTicksPerBatch = 10;

  // Samples the switches of `fabric` that have a modelled egress; none: samples nothing.
  TelemetrySampler(TelemetrySamplerDeps deps, const Fabric& fabric);
  ~TelemetrySampler();
  TelemetrySampler(const TelemetrySampler&) = delete;
  TelemetrySampler& operator=(const TelemetrySampler&) = delete;

  void start();
  // Joins the thread and stores the points not yet stored. Idempotent.
  void stop();
  // One reading of every switch, stamped now, kept for the next store (the thread's tick).
  void sampleOnce();
  // Stores the kept points.
  void storePending();
  bool samplesAnything() const { return !switches_.empty(); }

 private:
  void loop();

  TelemetrySamplerDeps deps_;
  std::vector<Switch> switches_;
  std::vector<core::TelemetryPoint> pending_;  // sampler thread (or the caller before start)
  std::set<std::string> failing_;              // switches whose error was reported
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace fabric_chaos::scenarios
