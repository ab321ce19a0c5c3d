#include "app/traffic_loop.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <limits>

#include "app/stop_signals.h"

namespace fabric_chaos::app {
namespace {

// Set by the SIGTERM/SIGINT handler. The signals are blocked except inside ppoll.
std::atomic<bool> g_traffic_stop{false};

void requestTrafficStop(int) { g_traffic_stop = true; }

}  // namespace

sigset_t installTrafficStopHandlers() {
  installStopHandlers(requestTrafficStop);
  signal(SIGPIPE, SIG_IGN);  // a closed stdout or socket is an error return, not a death
  sigset_t stops;
  sigemptyset(&stops);
  sigaddset(&stops, SIGTERM);
  sigaddset(&stops, SIGINT);
  sigset_t previous;
  sigprocmask(SIG_BLOCK, &stops, &previous);
  sigdelset(&previous, SIGTERM);
  sigdelset(&previous, SIGINT);
  return previous;
}

bool trafficStopRequested() { return g_traffic_stop; }

void printReportLine(const std::string& line) {
  std::fputs(line.c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

TrafficSchedule::TrafficSchedule(const workload::TrafficOptions& o, int64_t start_ns)
    : report_ns_(o.report_ms * kTrafficNsPerMs),
      next_report_ns_(start_ns + report_ns_),
      end_ns_(o.duration_s ? start_ns + *o.duration_s * 1000 * kTrafficNsPerMs
                           : std::numeric_limits<int64_t>::max()) {}

bool TrafficSchedule::finished(int64_t now_ns) const { return g_traffic_stop || now_ns >= end_ns_; }

bool TrafficSchedule::reportDue(int64_t now_ns) {
  if (now_ns < next_report_ns_) return false;
  next_report_ns_ += report_ns_;
  if (next_report_ns_ <= now_ns) next_report_ns_ = now_ns + report_ns_;
  return true;
}

int64_t TrafficSchedule::nextWakeNs() const { return std::min(next_report_ns_, end_ns_); }

}  // namespace fabric_chaos::app
