#pragma once
// The command line of `fabric-chaos pfc-emit` (the pfc_storm fault's emitter process) and the
// frame period it implies. Pure, so the app layer's loop only wires the socket, the clock and the
// signals. Usage errors are kInvalidArgument naming the flag (the command exits 2 with them).

#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"

namespace fabric_chaos::injectors {

struct PfcEmitterOptions {
  std::string ifname;                  // --ifname, required
  uint8_t class_enable = 0;            // --priorities 3,4 (required), as a PFC class mask
  uint16_t quanta = 65535;             // --quanta, for every listed priority
  std::optional<int64_t> interval_us;  // --interval-us: a fixed frame period
  bool continuous = false;             // --continuous: half the pause time at the link speed
  std::optional<int64_t> link_mbps;    // --link-mbps: overrides the speed ethtool reports
  int64_t on_ms = 0;                   // --on-ms/--off-ms: send A ms, pause B ms, repeat;
  int64_t off_ms = 0;                  //   on_ms 0 = send all the time
  bool xon_on_stop = false;            // --xon-on-stop: one XON frame on SIGTERM/SIGINT
  bool realtime = false;               // --realtime: SCHED_FIFO, so that frames leave on time
  int64_t stats_ms = 200;              // --stats-ms: one JSON stats line this often
};

// argv[0] is the subcommand ("pfc-emit"); flags follow as --name value or --name=value.
// Exactly one of --interval-us and --continuous; --on-ms and --off-ms together or not at all.
core::Result<PfcEmitterOptions> parsePfcEmitterArgs(int argc, char** argv);
std::string pfcEmitterUsage();

struct PfcEmitPeriod {
  int64_t period_ns = 0;
  std::string reason;  // e.g. "half of the 3355.4 us pause of 65535 quanta at 10000 Mbit/s
                       // reported by ethtool"
};

// The smallest period the emitter runs at; a shorter computed one is raised to it.
inline constexpr int64_t kMinPfcEmitPeriodNs = 1000;

// Whether the emitter runs under SCHED_FIFO: asked for (--realtime), and a period of at least
// 100 us, so that it sleeps most of the time and cannot starve the rest of its core.
inline constexpr int64_t kMinRealtimePfcEmitPeriodNs = 100'000;
inline bool pfcEmitRealtime(const PfcEmitterOptions& options, int64_t period_ns) {
  return options.realtime && period_ns >= kMinRealtimePfcEmitPeriodNs;
}

// The frame period: --interval-us as given, or with --continuous half the pause time of `quanta`
// at --link-mbps if given, else at reported_link_mbps (what ethtool says). kInvalidArgument when
// --continuous has no link speed to use (the message asks for --link-mbps).
core::Result<PfcEmitPeriod> pfcEmitPeriod(const PfcEmitterOptions& options,
                                          std::optional<int64_t> reported_link_mbps);

}  // namespace fabric_chaos::injectors
