// `fabric-chaos ib-probe`: the IB lab's workload rank (workload/ib_probe.h). Opens the local UMAD
// port through libibmad and probes the subnet's management every period until SIGTERM/SIGINT or
// --duration-s, writing the workload line protocol on stdout. In the IB lab the agent starts it
// with umad2sim preloaded and SIM_HOST naming its node.

#include <signal.h>

#include <atomic>
#include <cstdio>
#include <iostream>
#include <limits>

#include "app/cli.h"
#include "app/stop_signals.h"
#include "core/command_line.h"
#include "workload/ib_probe.h"
#include "workload/sys/ib_management.h"

namespace fabric_chaos::app {
namespace {

constexpr const char* kIbProbeUsage =
    R"(Usage: fabric-chaos ib-probe [options]

Probes an InfiniBand subnet's management every period from this node: the master SM its port
names (PortInfo), that SM's SMInfo, and an SA PathRecord to --peer-guid. Prints the workload line
protocol (one JSON object per line); docs/ib.md, "The IB probe".

  --rank N          the rank number in its reports (default 0)
  --peer-guid GUID  the port whose path is asked for, 0x... (default: this port)
  --period-ms MS    time between rounds (default 100, 10..10000)
  --duration-s S    stop after S seconds (default 600)
  --ca NAME         the CA to use (default: the first)
  --port N          its port (default 1)
  --timeout-ms MS   per MAD (default 50); --retries N (default 2)
  --check-routes    also discover the subnet and read every switch's forwarding table and port
                    states in the idle part of each period: routes_checked, routes_broken,
                    routes_restored and lft_changed events (one rank per subnet is enough)
  --routes-period-ms MS  how often a pass of route reads starts (default 100, 5..10000)
)";

std::atomic<bool> g_probe_stop{false};
void requestProbeStop(int) { g_probe_stop = true; }

bool readInt(const Flags& flags, const std::string& name, int64_t low, int64_t high, int64_t& out) {
  return readIntFlag(flags, "ib-probe", name, low, high, out);
}

}  // namespace

int ibProbeMain(int argc, char** argv) {
  const Flags flags = parseFlags(argc, argv,
                                 {{"rank", "peer-guid", "period-ms", "duration-s", "ca", "port",
                                   "timeout-ms", "retries", "routes-period-ms"},
                                  {"help", "check-routes"}});
  if (!flags.error.empty()) {
    std::fprintf(stderr, "fabric-chaos ib-probe: %s\n\n%s", flags.error.c_str(), kIbProbeUsage);
    return 2;
  }
  if (flags.has("help")) {
    std::fputs(kIbProbeUsage, stdout);
    return 0;
  }
  workload::IbProbeOptions options;
  int64_t rank = 0;
  int64_t duration_s = 600;
  int64_t port = 1;
  int64_t timeout_ms = 50;
  int64_t retries = 2;
  if (!readInt(flags, "rank", 0, 65535, rank) ||
      !readInt(flags, "period-ms", 10, 10000, options.period_ms) ||
      !readInt(flags, "duration-s", 1, 86400, duration_s) ||
      !readInt(flags, "port", 1, 254, port) ||
      !readInt(flags, "timeout-ms", 1, 10000, timeout_ms) ||
      !readInt(flags, "retries", 0, 10, retries) ||
      !readInt(flags, "routes-period-ms", 5, 10000, options.routes_period_ms)) {
    return 2;
  }
  if (auto guid = flags.get("peer-guid")) {
    try {
      size_t used = 0;
      options.peer_guid = std::stoull(*guid, &used, 16);
      if (used != guid->size() || guid->rfind("0x", 0) != 0) throw std::invalid_argument(*guid);
    } catch (const std::exception&) {
      std::fprintf(stderr,
                   "fabric-chaos ib-probe: --peer-guid expects 0x and hex digits, not \"%s\"\n",
                   guid->c_str());
      return 2;
    }
  }
  options.rank = static_cast<int>(rank);
  options.check_routes = flags.has("check-routes");
  options.max_duration_ms = duration_s * 1000;
  auto management =
      workload::openIbManagement(flags.getOr("ca", ""), static_cast<int>(port),
                                 static_cast<int>(timeout_ms), static_cast<int>(retries));
  if (!management.isOk()) {
    std::fprintf(stderr, "fabric-chaos ib-probe: %s\n", management.status().message().c_str());
    return 1;
  }
  installStopHandlers(requestProbeStop);
  signal(SIGPIPE, SIG_IGN);
  return workload::runIbProbe(options, **management, management->get(), std::cout, g_probe_stop);
}

}  // namespace fabric_chaos::app
