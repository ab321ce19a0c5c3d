#include "injectors/pfc/pfc_emitter_options.h"

#include <cstdio>

#include "core/command_line.h"
#include "injectors/pfc/pfc_frame.h"

namespace fabric_chaos::injectors {
namespace {

constexpr int64_t kDayMs = 86'400'000;

core::Status invalid(const std::string& message) {
  return core::Status(core::StatusCode::kInvalidArgument, message);
}

std::string formatMicros(double us) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), us >= 1 ? "%.1f" : "%.3g", us);
  return buf;
}

}  // namespace

core::Result<PfcEmitterOptions> parsePfcEmitterArgs(int argc, char** argv) {
  PfcEmitterOptions o;
  bool have_priorities = false;
  bool have_on = false;
  bool have_off = false;
  const core::FlagRules rules{
      {"ifname", "priorities", "quanta", "interval-us", "link-mbps", "on-ms", "off-ms", "stats-ms"},
      {"continuous", "xon-on-stop", "realtime"}};
  auto line = core::parseCommandLine(core::commandLineArgs(argc, argv, 1), rules);
  if (!line.isOk()) return line.status();
  for (const core::ParsedFlag& parsed : line->flags) {
    const std::string flag = "--" + parsed.name;
    const std::string& value = parsed.value;
    if (flag == "--continuous" || flag == "--xon-on-stop" || flag == "--realtime") {
      (flag == "--continuous"    ? o.continuous
       : flag == "--xon-on-stop" ? o.xon_on_stop
                                 : o.realtime) = true;
    } else if (flag == "--ifname") {
      if (value.empty() || value.size() > 15) {
        return invalid("--ifname \"" + value + "\" is not an interface name (1-15 characters)");
      }
      o.ifname = value;
    } else if (flag == "--priorities") {
      auto mask = parsePriorityList(value);
      if (!mask.isOk()) return mask.status().withContext("--priorities");
      o.class_enable = *mask;
      have_priorities = true;
    } else if (flag == "--quanta") {
      auto n = core::parseFlagInteger(flag, value, 0, 65535);
      if (!n.isOk()) return n.status();
      o.quanta = static_cast<uint16_t>(*n);
    } else if (flag == "--interval-us") {
      auto n = core::parseFlagInteger(flag, value, 1, 60'000'000);
      if (!n.isOk()) return n.status();
      o.interval_us = *n;
    } else if (flag == "--link-mbps") {
      auto n = core::parseFlagInteger(flag, value, 1, 10'000'000);
      if (!n.isOk()) return n.status();
      o.link_mbps = *n;
    } else if (flag == "--on-ms") {
      auto n = core::parseFlagInteger(flag, value, 1, kDayMs);
      if (!n.isOk()) return n.status();
      o.on_ms = *n;
      have_on = true;
    } else if (flag == "--off-ms") {
      auto n = core::parseFlagInteger(flag, value, 0, kDayMs);
      if (!n.isOk()) return n.status();
      o.off_ms = *n;
      have_off = true;
    } else {  // --stats-ms
      auto n = core::parseFlagInteger(flag, value, 10, kDayMs);
      if (!n.isOk()) return n.status();
      o.stats_ms = *n;
    }
  }
  if (o.ifname.empty()) return invalid("--ifname is required");
  if (!have_priorities) return invalid("--priorities is required (e.g. --priorities 3,4)");
  if (o.interval_us.has_value() == o.continuous) {
    return invalid("give exactly one of --interval-us N and --continuous");
  }
  if (o.continuous && o.quanta == 0) {
    return invalid("--continuous needs --quanta above 0 (a pause of 0 quanta lasts no time)");
  }
  if (have_on != have_off) return invalid("--on-ms and --off-ms go together");
  return o;
}

std::string pfcEmitterUsage() {
  return R"(Usage: fabric-chaos pfc-emit --ifname IF --priorities P[,P...]
                         (--interval-us N | --continuous) [options]

Sends IEEE 802.1Qbb PFC pause frames out of IF, in the network namespace it was started in,
until SIGTERM or SIGINT (or its parent process goes away).

  --ifname IF          the interface to send on (required)
  --priorities 3,4     the priorities (0-7) to pause (required)
  --quanta Q           pause time of every listed priority, 0-65535 units of 512 bit times
                       (default 65535)
  --interval-us N      send one frame every N microseconds
  --continuous         send every half pause time at the link speed, so the pause never lapses
  --link-mbps M        the link speed for --continuous when ethtool reports none (it overrides
                       the reported one)
  --on-ms A --off-ms B intermittent storm: send during A ms, stay silent B ms, repeat
  --xon-on-stop        on stopping send one XON (pause time 0) for the listed priorities
  --realtime           run under SCHED_FIFO (priority 10; needs root), so that a busy machine's
                       scheduler does not delay frames: a continuous storm's gaps then stay
                       within a small fraction of the pause time
  --stats-ms S         print a JSON stats line on stdout every S ms (default 200); the first
                       one right after the first frame, the last one with "final":true

Exit status: 0 stopped, 1 the packet socket cannot be opened, 2 bad usage.
)";
}

core::Result<PfcEmitPeriod> pfcEmitPeriod(const PfcEmitterOptions& options,
                                          std::optional<int64_t> reported_link_mbps) {
  PfcEmitPeriod period;
  if (options.interval_us.has_value()) {
    period.period_ns = *options.interval_us * 1000;
    period.reason = "--interval-us " + std::to_string(*options.interval_us);
    return period;
  }
  std::optional<int64_t> mbps = options.link_mbps;
  std::string source = "from --link-mbps";
  if (!mbps.has_value() && reported_link_mbps.has_value() && *reported_link_mbps > 0) {
    mbps = reported_link_mbps;
    source = "reported by ethtool";
  }
  if (!mbps.has_value() || *mbps <= 0) {
    return invalid("--continuous: " + options.ifname +
                   " reports no link speed; give it with --link-mbps M");
  }
  // pause = quanta * 512 bits / (mbps * 1e6 bit/s); half of it in ns = quanta * 256000 / mbps.
  const double pause_us = pauseSeconds(options.quanta, static_cast<double>(*mbps) * 1e6) * 1e6;
  period.period_ns = int64_t{options.quanta} * 256'000 / *mbps;
  period.reason = "half of the " + formatMicros(pause_us) + " us pause of " +
                  std::to_string(options.quanta) + " quanta at " + std::to_string(*mbps) +
                  " Mbit/s " + source;
  if (period.period_ns < kMinPfcEmitPeriodNs) {
    period.period_ns = kMinPfcEmitPeriodNs;
    period.reason += ", raised to the 1 us minimum";
  }
  return period;
}

}  // namespace fabric_chaos::injectors
