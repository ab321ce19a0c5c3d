#include "app/pfc_switch_options.h"

#include <cstdlib>

#include "app/cli.h"
#include "core/command_line.h"

namespace fabric_chaos::app {
const char kPfcSwitchUsage[] =
    "usage: fabric-chaos pfc-switch --ports P[,P...] --rate-bps R --buffer-bytes B\n"
    "                               [--lossless-dscp D[,D]] [--lossless-priority 3]\n"
    "                               [--pfc-enabled PORT=MASK[,PORT=MASK]] [--stats FILE]\n"
    "                               [--settings FILE]\n"
    "                               [--netns-file /run/netns/NAME] [--pid-file FILE]\n"
    "                               [--watchdog ACTION[:DETECT_MS[:RESTORE_MS]]]\n"
    "                               [--xoff BYTES [--xon BYTES]]\n"
    "                               [--daemon [--log FILE]]\n"
    "The PFC agent of a lab switch: run inside the switch's namespace. Pauses a port's egress for\n"
    "the priorities of each 802.1Qbb frame the port receives, for quanta x 512 bit times at R,\n"
    "holding the paused frames (up to B bytes per port and priority) and sending them when the\n"
    "pause ends. The lossless DSCPs (default 26) have --lossless-priority, everything else 0.\n"
    "--pfc-enabled: the priorities a port honours (hex mask; default all). --stats: the counters\n"
    "as JSON, rewritten every 200 ms. --netns-file: exit when that namespace is deleted.\n"
    "--watchdog: a PFC watchdog as SONiC's pfcwd (drop, forward or alert; 200 ms detection and\n"
    "restoration by default): a priority paused for the detection time is in a storm.\n"
    "--xoff: pause propagation: a paused queue holding this many bytes sends PFC (65535 quanta,\n"
    "refreshed every half pause time) out of the ports its frames came in on, until it holds no\n"
    "more than --xon (an XON then). Default half of B and a quarter; --xoff 0: never.\n"
    "--settings: where the per-port PFC enable masks and watchdogs live while it runs: written\n"
    "at start from --pfc-enabled and --watchdog, read again on SIGHUP; the counters report the\n"
    "generation in force (settings_generation) or why a file was refused (settings_error).\n"
    "--daemon: detach once running (the parent exits 0 when the gate is attached), its output\n"
    "then going to --log (default: nowhere).\n";

core::Result<PfcSwitchOptions> parsePfcSwitchOptions(int argc, char** argv) {
  const core::FlagRules rules{
      {"ports", "rate-bps", "buffer-bytes", "lossless-dscp", "lossless-priority", "pfc-enabled",
       "stats", "settings", "netns-file", "pid-file", "log", "watchdog", "xoff", "xon"},
      {"daemon", "help"},
      false};
  const Flags flags = parseFlags(argc, argv, rules);
  if (!flags.error.empty()) return core::Status(core::StatusCode::kInvalidArgument, flags.error);
  PfcSwitchOptions o;
  o.ports = core::splitCommaList(flags.getOr("ports", ""));
  if (o.ports.empty())
    return core::Status(core::StatusCode::kInvalidArgument, "--ports is required");
  auto rate =
      core::parseFlagInteger("--rate-bps", flags.getOr("rate-bps", ""), 1'000'000, 100'000'000'000);
  if (!rate.isOk()) return rate.status();
  o.rate_bps = *rate;
  auto buffer = core::parseFlagInteger("--buffer-bytes", flags.getOr("buffer-bytes", ""), 1514,
                                       int64_t{64} << 20);
  if (!buffer.isOk()) return buffer.status();
  o.buffer_bytes = *buffer;
  if (auto dscps = flags.get("lossless-dscp")) {
    o.lossless_dscp_mask = 0;
    for (const std::string& d : core::splitCommaList(*dscps)) {
      auto dscp = core::parseFlagInteger("--lossless-dscp", d, 0, 63);
      if (!dscp.isOk()) return dscp.status();
      o.lossless_dscp_mask |= uint64_t{1} << *dscp;
    }
  }
  if (auto priority = flags.get("lossless-priority")) {
    auto p = core::parseFlagInteger("--lossless-priority", *priority, 0, 7);
    if (!p.isOk()) return p.status();
    o.lossless_priority = static_cast<int>(*p);
  }
  for (const std::string& item : core::splitCommaList(flags.getOr("pfc-enabled", ""))) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      return core::Status(core::StatusCode::kInvalidArgument,
                          "--pfc-enabled expects PORT=MASK, got \"" + item + "\"");
    }
    char* end = nullptr;
    const std::string mask_text = item.substr(eq + 1);
    const unsigned long mask = std::strtoul(mask_text.c_str(), &end, 0);
    if (mask_text.empty() || *end != '\0' || mask > 0xff) {
      return core::Status(core::StatusCode::kInvalidArgument,
                          "--pfc-enabled: the mask of " + item.substr(0, eq) +
                              " must be 0 to 0xff, got \"" + mask_text + "\"");
    }
    o.pfc_enabled[item.substr(0, eq)] = static_cast<uint8_t>(mask);
  }
  o.stats_path = flags.getOr("stats", "");
  o.settings_path = flags.getOr("settings", "");
  o.netns_file = flags.getOr("netns-file", "");
  o.pid_path = flags.getOr("pid-file", "");
  o.log_path = flags.getOr("log", "");
  if (auto watchdog = flags.get("watchdog")) {
    auto config = injectors::parsePfcWatchdog(*watchdog);
    if (!config.isOk()) return config.status();
    o.watchdog = *config;
  }
  auto xoff = core::parseFlagInteger(
      "--xoff", flags.getOr("xoff", std::to_string(o.buffer_bytes / 2)), 0, o.buffer_bytes);
  if (!xoff.isOk()) return xoff.status();
  o.xoff_bytes = *xoff;
  auto xon = core::parseFlagInteger("--xon", flags.getOr("xon", std::to_string(o.xoff_bytes / 2)),
                                    0, o.xoff_bytes);
  if (!xon.isOk()) return xon.status();
  o.xon_bytes = *xon;
  o.daemon = flags.has("daemon");
  return o;
}

injectors::PfcSwitchSettings initialPfcSwitchSettings(const PfcSwitchOptions& options) {
  injectors::PfcSwitchSettings settings;
  for (const std::string& port : options.ports) {
    auto enabled = options.pfc_enabled.find(port);
    settings.ports[port] = {enabled == options.pfc_enabled.end() ? uint8_t{0xff} : enabled->second,
                            options.watchdog};
  }
  return settings;
}

}  // namespace fabric_chaos::app
