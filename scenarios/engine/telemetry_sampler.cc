#include "scenarios/engine/telemetry_sampler.h"

#include <chrono>

#include "core/log.h"

namespace fabric_chaos::scenarios {

TelemetrySampler::TelemetrySampler(TelemetrySamplerDeps deps, const Fabric& fabric)
    : deps_(std::move(deps)) {
  if (deps_.source == nullptr) return;
  for (const Switch& sw : fabric.switches) {
    if (sw.egress) switches_.push_back(sw);
  }
}

TelemetrySampler::~TelemetrySampler() { stop(); }

void TelemetrySampler::start() {
  if (switches_.empty() || thread_.joinable()) return;
  thread_ = std::thread([this] { loop(); });
}

void TelemetrySampler::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  storePending();
}

void TelemetrySampler::sampleOnce() {
  for (const Switch& sw : switches_) {
    auto points = deps_.source->read(sw);
    const double t_ms = static_cast<double>(deps_.clock->nowNs() - deps_.origin_ns) / 1e6;
    if (!points.isOk()) {
      if (failing_.insert(sw.name).second && deps_.event) {
        deps_.event("telemetry_error", {{"switch", sw.name}, {"error", points.status().message()}});
      }
      continue;
    }
    if (failing_.erase(sw.name) > 0 && deps_.event) {
      deps_.event("telemetry_resumed", {{"switch", sw.name}});
    }
    for (core::TelemetryPoint& p : *points) {
      p.t_ms = t_ms;
      pending_.push_back(std::move(p));
    }
  }
}

void TelemetrySampler::storePending() {
  if (pending_.empty()) return;
  if (core::Status s = deps_.store->appendTelemetry(deps_.run_id, pending_); !s.isOk()) {
    // Telemetry is an observation beside the measurement: a lost batch is logged, not fatal.
    core::logWarn("run " + std::to_string(deps_.run_id) + ": " + std::to_string(pending_.size()) +
                  " telemetry points not stored: " + s.toString());
  }
  pending_.clear();
}

void TelemetrySampler::loop() {
  auto next = std::chrono::steady_clock::now();
  int ticks = 0;
  while (true) {
    sampleOnce();
    if (++ticks % kTicksPerBatch == 0) storePending();
    next += std::chrono::milliseconds(kPeriodMs);
    // A late tick (a slow store) does not make the next ones come in a burst.
    const auto now = std::chrono::steady_clock::now();
    if (next < now) next = now;
    std::unique_lock lock(mu_);
    if (cv_.wait_until(lock, next, [this] { return stopping_; })) return;
  }
}

}  // namespace fabric_chaos::scenarios
