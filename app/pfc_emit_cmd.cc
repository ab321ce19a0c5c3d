// `fabric-chaos pfc-emit`: the pfc_storm fault's emitter process. Sends 802.1Qbb pause frames on
// absolute CLOCK_MONOTONIC deadlines until SIGTERM/SIGINT or until its parent goes away, printing
// JSON stats lines on stdout. Arguments, period and pacing are pure (injectors/pfc/); this file
// wires them to the packet socket, the clock and the signals.

#include <signal.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <string>

#include "app/cli.h"
#include "app/stop_signals.h"
#include "injectors/pfc/pfc_emit_timing.h"
#include "injectors/pfc/pfc_emitter_options.h"
#include "injectors/pfc/pfc_frame.h"
#include "injectors/sys/ethtool.h"
#include "injectors/sys/process.h"
#include "injectors/sys/raw_packets.h"

namespace fabric_chaos::app {
namespace {

// Set from the SIGTERM/SIGINT handler; clock_nanosleep returns EINTR, so the loop sees it at once.
std::atomic<bool> g_pfc_stop_requested{false};

void requestPfcStop(int) { g_pfc_stop_requested = true; }

int64_t monotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

void sleepUntil(int64_t deadline_ns) {
  timespec ts{};
  ts.tv_sec = deadline_ns / 1'000'000'000;
  ts.tv_nsec = deadline_ns % 1'000'000'000;
  // EINTR (a stop signal) returns early on purpose; the loop re-checks.
  clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
}

void printLine(const std::string& line) {
  std::fputs(line.c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

void installPfcStopHandlers() {
  installStopHandlers(requestPfcStop);  // no SA_RESTART: the sleep must end
  signal(SIGPIPE, SIG_IGN);  // a supervisor that closed our stdout does not kill the storm's end
}

}  // namespace

int pfcEmitMain(int argc, char** argv) {
  // First of all: a parent that dies while we start up must still be noticed.
  const pid_t parent = getppid();
  // Next: a stop asked for while we start up ends the loop before it begins (final line, XON).
  installPfcStopHandlers();
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::fputs(injectors::pfcEmitterUsage().c_str(), stdout);
      return 0;
    }
  }
  auto options = injectors::parsePfcEmitterArgs(argc, argv);
  if (!options.isOk()) {
    std::fprintf(stderr, "fabric-chaos pfc-emit: %s\n\n%s", options.status().message().c_str(),
                 injectors::pfcEmitterUsage().c_str());
    return 2;
  }
  const injectors::PfcEmitterOptions& o = options.value();
  std::optional<int64_t> reported_mbps;
  if (o.continuous && !o.link_mbps.has_value()) reported_mbps = sys::linkSpeedMbps(o.ifname);
  auto period = injectors::pfcEmitPeriod(o, reported_mbps);
  if (!period.isOk()) {
    std::fprintf(stderr, "fabric-chaos pfc-emit: %s\n", period.status().message().c_str());
    return 2;
  }

  auto socket = sys::openRawPacketSocket(o.ifname);
  if (!socket.isOk()) {
    std::fprintf(stderr, "fabric-chaos pfc-emit: cannot send on %s: %s\n", o.ifname.c_str(),
                 socket.status().toString().c_str());
    return 1;
  }
  sys::RawPacketSocket& out = *socket.value();
  const auto pause_frame =
      injectors::buildPfcFrame(out.mac(), injectors::pfcPause(o.class_enable, o.quanta));
  const auto xon_frame = injectors::buildPfcFrame(out.mac(), injectors::pfcXon(o.class_enable));

  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);  // wake within ~1 ns of the deadline, not 50 us
  if (injectors::pfcEmitRealtime(o, period->period_ns)) {
    // On a busy 2-core machine an ordinary emitter's gaps reached 0.18-0.26 of the pause time
    // at p99; under SCHED_FIFO, 0.04.
    if (core::Status status = sys::enterRealtimeScheduling(10); !status.isOk()) {
      std::fprintf(stderr, "fabric-chaos pfc-emit: staying an ordinary process: %s\n",
                   status.toString().c_str());
    }
  } else if (o.realtime) {
    std::fprintf(stderr,
                 "fabric-chaos pfc-emit: a %.1f us period is too short for real-time scheduling "
                 "(it could take a core); staying an ordinary process\n",
                 static_cast<double>(period->period_ns) / 1000.0);
  }

  const int64_t period_ns = period->period_ns;
  std::fprintf(stderr,
               "fabric-chaos pfc-emit: %s priorities mask 0x%02x quanta %u, period %.3f us (%s)\n",
               o.ifname.c_str(), o.class_enable, unsigned{o.quanta},
               static_cast<double>(period_ns) / 1000.0, period->reason.c_str());
  std::fflush(stderr);

  const int64_t start_ns = monotonicNs();
  injectors::PfcPacer pacer(start_ns, period_ns, o.on_ms * 1'000'000, o.off_ms * 1'000'000);
  injectors::PfcEmitRecorder recorder(start_ns, period_ns);
  const int64_t stats_ns = o.stats_ms * 1'000'000;
  // The first line right after the first frame: a supervisor waits for it to know we run.
  int64_t next_stats_ns = start_ns;
  std::string last_error;

  auto sendOne = [&](const std::array<uint8_t, injectors::kPfcFrameBytes>& frame, bool timed) {
    core::Status status = out.send(frame.data(), frame.size());
    if (status.isOk()) {
      recorder.sent(monotonicNs(), timed);
      return;
    }
    recorder.sendFailed();
    if (status.message() != last_error) {  // once per distinct error, not once per frame
      last_error = status.message();
      std::fprintf(stderr, "fabric-chaos pfc-emit: %s\n", status.toString().c_str());
    }
  };

  while (!g_pfc_stop_requested) {
    if (getppid() != parent) break;  // orphaned: the supervisor is gone
    int64_t now = monotonicNs();
    const injectors::PfcPacer::Due due = pacer.due(now);
    for (int i = 0; i < due.frames; ++i) sendOne(pause_frame, true);
    recorder.skipped(due.skipped);
    now = monotonicNs();
    if (now >= next_stats_ns) {
      printLine(recorder.jsonLine(now, false));
      next_stats_ns += stats_ns;
      if (next_stats_ns <= now) next_stats_ns = now + stats_ns;  // late: no bunched lines
    }
    sleepUntil(std::min(pacer.nextDeadline(), next_stats_ns));
  }
  if (o.xon_on_stop) sendOne(xon_frame, false);
  printLine(recorder.jsonLine(monotonicNs(), true));
  return 0;
}

}  // namespace fabric_chaos::app
