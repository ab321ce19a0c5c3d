#include "workload/ib_probe.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <optional>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "workload/ib_route_watch.h"
#include "workload/ib_routes.h"
#include "workload/report.h"

namespace fabric_chaos::workload {
namespace {

using nlohmann::json;

constexpr int64_t kNsPerMs = 1'000'000;

std::string hexGuid(uint64_t guid) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%016" PRIx64, guid);
  return text;
}

struct Round {
  bool ok = false;
  std::string failure;
  LocalIbPort port;
  ib::SmInfoReply master;
};

Round probeOnce(IbManagement& management, uint64_t peer_guid) {
  Round round;
  auto port = management.localPort();
  if (!port.isOk()) {
    round.failure = "local port: " + port.status().message();
    return round;
  }
  round.port = *port;
  auto master = management.smInfo(port->sm_lid);
  if (!master.isOk()) {
    round.failure = "SMInfo: " + master.status().message();
    return round;
  }
  if (master->state != ib::SmState::kMaster) {
    round.failure = "the SM at LID " + std::to_string(port->sm_lid) + " is " +
                    ib::describe(master->state) + ", not master";
    return round;
  }
  round.master = *master;
  auto path = management.pathRecord(port->sm_lid, peer_guid != 0 ? peer_guid : port->port_guid);
  if (!path.isOk()) {
    round.failure = "PathRecord: " + path.status().message();
    return round;
  }
  round.ok = true;
  return round;
}

class ProbeReport {
 public:
  ProbeReport(std::ostream& out, int rank) : out_(out), rank_(rank) {}
  bool healthy() const { return static_cast<bool>(out_); }
  void ready() { write(encodeReady(rank_, core::steadyNowNs())); }
  void sample(const RawSample& s) {
    pending_.push_back(s);
    if (s.start_ns + s.duration_ns - last_flush_ns_ >= 100 * kNsPerMs) flush();
  }
  void event(const char* kind, const json& detail, int64_t t_ns) {
    flush();
    write(encodeEvent(rank_, t_ns, kind, detail));
  }
  void done(int64_t iterations) {
    flush();
    write(encodeDone(rank_, core::steadyNowNs(), iterations));
  }
  void flush() {
    last_flush_ns_ = core::steadyNowNs();
    if (pending_.empty()) return;
    write(encodeSamples(rank_, pending_));
    pending_.clear();
  }

 private:
  void write(const std::string& line) { out_ << line << '\n' << std::flush; }
  std::ostream& out_;
  int rank_;
  int64_t last_flush_ns_ = 0;
  std::vector<RawSample> pending_;
};

// Sleeps until `until_ns` in slices, so that stop is seen within 20 ms. False on stop.
bool sleepUntil(int64_t until_ns, const std::atomic<bool>& stop) {
  while (!stop.load(std::memory_order_relaxed)) {
    const int64_t left = until_ns - core::steadyNowNs();
    if (left <= 0) return true;
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(left, 20 * kNsPerMs)));
  }
  return false;
}

// What the next round's start leaves for reading routes: a read must not delay it.
constexpr int64_t kRouteReadMarginNs = 2 * kNsPerMs;

// The route reads of a probe with check_routes: a pass starts every period_ns, and its reads go
// in the idle time between rounds.
class RouteReads {
 public:
  RouteReads(ib::RouteMap map, int timeout_ms, int64_t period_ns)
      : sweep_(map, timeout_ms), watch_(map), period_ns_(period_ns) {}

  // Idles until `until_ns` (the next round), reading routes whenever a pass is due. False on stop.
  bool idleUntil(int64_t until_ns, SmpReader& smp, ProbeReport& report,
                 const std::atomic<bool>& stop) {
    while (!stop.load(std::memory_order_relaxed)) {
      const int64_t now_ns = core::steadyNowNs();
      if (now_ns >= until_ns) return true;
      if (!sweep_.midPass() && now_ns < next_pass_ns_) {
        if (!sleepUntil(std::min(until_ns, next_pass_ns_), stop)) return false;
        continue;
      }
      if (auto pass = sweep_.advance(smp, until_ns - kRouteReadMarginNs)) {
        const int64_t done_ns = core::steadyNowNs();
        next_pass_ns_ = done_ns - pass->duration_ns + period_ns_;
        ++passes_;
        pass_ns_total_ += pass->duration_ns;
        pass_ns_max_ = std::max(pass_ns_max_, pass->duration_ns);
        for (const RouteEvent& e : watch_.onPass(pass->reading, done_ns, pass->duration_ns)) {
          report.event(e.kind.c_str(), e.detail, done_ns);
        }
        continue;
      }
      return sleepUntil(until_ns, stop);  // no time left before the round: the pass goes on after
    }
    return false;
  }

  // {"passes", "mean_pass_ms", "max_pass_ms"}: the resolution the route figures actually had.
  json summary() const {
    const double mean = passes_ > 0 ? static_cast<double>(pass_ns_total_) / passes_ / 1e6 : 0.0;
    return {{"passes", passes_},
            {"mean_pass_ms", mean},
            {"max_pass_ms", static_cast<double>(pass_ns_max_) / 1e6}};
  }

 private:
  RouteSweep sweep_;
  RouteWatch watch_;
  int64_t period_ns_;
  int64_t next_pass_ns_ = 0;
  int64_t passes_ = 0;
  int64_t pass_ns_total_ = 0;
  int64_t pass_ns_max_ = 0;
};

// Idles until `until_ns`, reading routes meanwhile when there are any to read. False on stop.
bool idleUntil(int64_t until_ns, std::optional<RouteReads>& routes, SmpReader* smp,
               ProbeReport& report, const std::atomic<bool>& stop) {
  if (!routes) return sleepUntil(until_ns, stop);
  return routes->idleUntil(until_ns, *smp, report, stop);
}

}  // namespace

int runIbProbe(const IbProbeOptions& options, IbManagement& management, SmpReader* smp,
               std::ostream& out, const std::atomic<bool>& stop) {
  ProbeReport report(out, options.rank);
  std::optional<RouteReads> routes;
  std::string routes_unavailable;
  if (options.check_routes && smp != nullptr) {
    // Before ready: the discovery's reads are not part of any iteration.
    auto map = discoverRoutes(*smp, options.route_timeout_ms);
    if (map.isOk()) {
      routes.emplace(std::move(*map), options.route_timeout_ms,
                     std::max<int64_t>(options.routes_period_ms, 1) * kNsPerMs);
    } else {
      routes_unavailable = map.status().message();
    }
  }
  report.ready();
  if (!routes_unavailable.empty()) {
    report.event(kEventRoutesUnavailable, {{"reason", routes_unavailable}}, core::steadyNowNs());
  }
  const int64_t period_ns = std::max<int64_t>(options.period_ms, 1) * kNsPerMs;
  const int64_t end_ns = core::steadyNowNs() + options.max_duration_ms * kNsPerMs;
  int64_t iteration = 0;
  int64_t start_ns = core::steadyNowNs();
  std::optional<int64_t> outage_since_ns;
  std::optional<uint64_t> master_guid;
  std::optional<uint16_t> lid;
  while (!stop.load(std::memory_order_relaxed) && core::steadyNowNs() < end_ns &&
         report.healthy()) {
    const Round round = probeOnce(management, options.peer_guid);
    const int64_t now_ns = core::steadyNowNs();
    // A round cut short by stop (SIGTERM during a MAD timeout) says nothing about the subnet.
    if (stop.load(std::memory_order_relaxed)) break;
    if (!round.ok) {
      if (!outage_since_ns) {
        outage_since_ns = now_ns;
        report.event(kEventSaUnavailable, {{"reason", round.failure}, {"iteration", iteration}},
                     now_ns);
      }
      if (!idleUntil(now_ns + period_ns, routes, smp, report, stop)) break;
      continue;
    }
    if (outage_since_ns) {
      report.event(kEventSaAvailable,
                   {{"after_ms", static_cast<double>(now_ns - *outage_since_ns) / kNsPerMs},
                    {"iteration", iteration}},
                   now_ns);
      outage_since_ns.reset();
    }
    if (master_guid && *master_guid != round.master.guid) {
      report.event(kEventSmMasterChanged,
                   {{"from", hexGuid(*master_guid)},
                    {"to", hexGuid(round.master.guid)},
                    {"lid", round.master.lid},
                    {"priority", round.master.priority}},
                   now_ns);
    }
    master_guid = round.master.guid;
    if (lid && *lid != round.port.lid) {
      report.event(kEventLidChanged, {{"from", *lid}, {"to", round.port.lid}}, now_ns);
    }
    lid = round.port.lid;
    // The iteration lasts until the next round begins: a healthy subnet gives one iteration per
    // period, an outage one long iteration, so the analysis measures availability, not latency.
    if (!idleUntil(std::max(start_ns + period_ns, now_ns), routes, smp, report, stop)) break;
    const int64_t next_ns = core::steadyNowNs();
    report.sample({iteration, start_ns, next_ns - start_ns, kIbProbeBytesPerRound});
    ++iteration;
    start_ns = next_ns;
  }
  if (routes) report.event(kEventRoutesSummary, routes->summary(), core::steadyNowNs());
  report.done(iteration);
  return report.healthy() ? 0 : 1;
}

}  // namespace fabric_chaos::workload
