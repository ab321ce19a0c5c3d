#pragma once
// What the traffic generator's loops share, whatever their transport (app/tcp_traffic.cc,
// app/verbs_traffic.cc): the stop signals, report lines on stdout, and the clock of reports and
// of the end of the run. The loops run on the main thread of `fabric-chaos traffic`.

#include <signal.h>

#include <cstdint>
#include <string>

#include "workload/traffic.h"

namespace fabric_chaos::app {

inline constexpr int64_t kTrafficNsPerMs = 1'000'000;
// Between connection attempts of a flow, whatever the transport.
inline constexpr int64_t kTrafficRetryNs = 100 * kTrafficNsPerMs;

// Installs the SIGTERM/SIGINT handlers, blocks those signals and returns the mask to wait with
// (the old one without them): a stop that arrives between a check and a wait still ends the wait.
sigset_t installTrafficStopHandlers();
bool trafficStopRequested();

// One report line on stdout, flushed.
void printReportLine(const std::string& line);

// The report clock and the end of the run.
class TrafficSchedule {
 public:
  TrafficSchedule(const workload::TrafficOptions& o, int64_t start_ns);
  bool finished(int64_t now_ns) const;
  // True when a report is due; then the next one is scheduled (late: one period from now).
  bool reportDue(int64_t now_ns);
  int64_t nextWakeNs() const;

 private:
  int64_t report_ns_;
  int64_t next_report_ns_;
  int64_t end_ns_;
};

// The loops: each returns the process's exit status (workload::trafficUsage()).
int runTcpSink(const workload::TrafficOptions& o, const sigset_t& wait_mask);
int runTcpSource(const workload::TrafficOptions& o, const sigset_t& wait_mask);
int runVerbsSink(const workload::TrafficOptions& o, const sigset_t& wait_mask);
int runVerbsSource(const workload::TrafficOptions& o, const sigset_t& wait_mask);

}  // namespace fabric_chaos::app
