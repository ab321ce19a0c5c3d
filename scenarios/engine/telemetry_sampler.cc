#include "scenarios/engine/telemetry_sampler.h"

#include <chrono>

#include "core/log.h"
#include "core/telemetry.h"

namespace fabric_chaos::scenarios {

std::vector<Host> rdmaTelemetryHosts(const Fabric& fabric) {
  std::vector<Host> out;
  std::set<std::string> agents;
  for (const Host& host : fabric.hosts) {
    const bool local = host.agent.empty() || host.agent == "local";
    if (local && !host.netns.empty()) continue;
    if (!agents.insert(local ? "local" : host.agent).second) continue;
    out.push_back(host);
  }
  return out;
}

std::vector<core::TelemetryPoint> onRunClock(std::vector<core::TelemetryPoint> points, double t_ms,
                                             int64_t origin_ns) {
  std::vector<core::TelemetryPoint> out;
  out.reserve(points.size());
  for (core::TelemetryPoint& p : points) {
    p.t_ms = t_ms;
    if (core::isInstantMetric(p.metric)) {
      if (p.value <= 0) continue;  // never happened
      p.value = (p.value - origin_ns) / 1000;
    }
    out.push_back(std::move(p));
  }
  return out;
}

TelemetrySampler::TelemetrySampler(TelemetrySamplerDeps deps, const Fabric& fabric)
    : deps_(std::move(deps)) {
  if (deps_.source == nullptr) return;
  for (const Switch& sw : fabric.switches) {
    if (sw.egress) switches_.push_back(sw);
  }
}

TelemetrySampler::~TelemetrySampler() { stop(); }

void TelemetrySampler::start() {
  std::lock_guard lock(mu_);
  if (!threads_.empty() || stopping_) return;
  last_store_ns_ = deps_.clock->nowNs();
  if (!switches_.empty()) {
    threads_.emplace_back([this] {
      every(kPeriodMs, [this] {
        sampleOnce();
        return true;
      });
    });
  }
  for (size_t i = 0; i < deps_.rdma_hosts.size(); ++i) {
    threads_.emplace_back(
        [this, i] { every(kRdmaPeriodMs, [this, i] { return sampleRdmaOnce(i); }); });
  }
}

void TelemetrySampler::stop() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  cv_.notify_all();
  for (std::thread& t : threads) t.join();
  storePending();
}

double TelemetrySampler::runMs() {
  return static_cast<double>(deps_.clock->nowNs() - deps_.origin_ns) / 1e6;
}

void TelemetrySampler::keep(std::vector<core::TelemetryPoint> points) {
  std::lock_guard lock(mu_);
  for (core::TelemetryPoint& p : points) pending_.push_back(std::move(p));
}

void TelemetrySampler::noteHealth(const std::string& key, const nlohmann::json& who,
                                  const core::Status& status) {
  bool report = false;
  {
    std::lock_guard lock(mu_);
    report = status.isOk() ? failing_.erase(key) > 0 : failing_.insert(key).second;
  }
  if (!report || !deps_.event) return;
  nlohmann::json detail = who;
  if (!status.isOk()) detail["error"] = status.message();
  deps_.event(status.isOk() ? "telemetry_resumed" : "telemetry_error", std::move(detail));
}

void TelemetrySampler::sampleOnce() {
  for (const Switch& sw : switches_) {
    auto points = deps_.source->read(sw);
    const double t_ms = runMs();
    noteHealth("switch " + sw.name, {{"switch", sw.name}}, points.status());
    if (!points.isOk()) continue;
    keep(onRunClock(std::move(points.value()), t_ms, deps_.origin_ns));
  }
}

bool TelemetrySampler::sampleRdmaOnce(size_t i) {
  const RdmaTelemetryHost& host = deps_.rdma_hosts.at(i);
  auto ports = host.agent->rdmaCounters();
  const double t_ms = runMs();
  noteHealth("rdma " + host.host, {{"host", host.host}, {"rdma", true}}, ports.status());
  if (!ports.isOk()) return true;
  if (ports->empty()) return false;  // no RDMA on this host: nothing to ask again
  std::vector<core::TelemetryPoint> points;
  for (const sys::RdmaPortCounters& port : *ports) {
    const std::string source = core::telemetrySourceName(
        core::TelemetrySource::rdmaPort(host.host, port.device, port.port));
    for (const auto& [name, value] : port.counters) points.push_back({t_ms, source, name, value});
  }
  keep(std::move(points));
  return true;
}

void TelemetrySampler::storePending() {
  std::vector<core::TelemetryPoint> batch;
  {
    std::lock_guard lock(mu_);
    batch.swap(pending_);
    last_store_ns_ = deps_.clock->nowNs();
  }
  if (batch.empty()) return;
  if (core::Status s = deps_.store->appendTelemetry(deps_.run_id, batch); !s.isOk()) {
    // Telemetry is an observation beside the measurement: a lost batch is logged, not fatal.
    core::logWarn("run " + std::to_string(deps_.run_id) + ": " + std::to_string(batch.size()) +
                  " telemetry points not stored: " + s.toString());
  }
}

void TelemetrySampler::every(int64_t period_ms, const std::function<bool()>& tick) {
  auto next = std::chrono::steady_clock::now();
  while (tick()) {
    bool store_due = false;
    {
      std::lock_guard lock(mu_);
      store_due = deps_.clock->nowNs() - last_store_ns_ >= kStorePeriodMs * 1'000'000;
    }
    if (store_due) storePending();
    next += std::chrono::milliseconds(period_ms);
    // A late tick (a slow store or agent) does not make the next ones come in a burst.
    const auto now = std::chrono::steady_clock::now();
    if (next < now) next = now;
    std::unique_lock lock(mu_);
    if (cv_.wait_until(lock, next, [this] { return stopping_; })) return;
  }
}

}  // namespace fabric_chaos::scenarios
