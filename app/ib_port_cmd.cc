// `fabric-chaos ib-port`: one switch port's physical state read, disabled or enabled from this
// node's IB port by direct route (workload/ib_port_state.h), as `ibportstate` does. The
// ib_link_down and ib_link_flap kinds run it on real subnets (injectors/sys/ib_port_command.h);
// in the IB lab it runs with umad2sim preloaded and SIM_HOST naming the node it sends from.
// Prints one JSON object on success; exit 1 with the reason on stderr otherwise.

#include <cstdio>
#include <iostream>

#include "app/cli.h"
#include "workload/ib_port_state.h"
#include "workload/sys/ib_management.h"

namespace fabric_chaos::app {
namespace {

constexpr const char* kIbPortUsage =
    R"(Usage: fabric-chaos ib-port --node NAME --port N (--query | --disable | --enable) [options]

Reads or sets the physical state of port N of switch NAME (its node description), or of the
switch port cabled to channel adapter NAME, from this node by direct route: --disable takes the
link down on both ends (PortPhysicalState Disabled), --enable lets it train again (Polling).
Prints {"switch", "guid", "port", "route", "before", "after"}; docs/ib.md, "Real subnets".

  --ca NAME         the CA to send from (default: the first)
  --ca-port N       its port (default 1)
  --timeout-ms MS   per MAD (default 100); --retries N (default 2)
)";

}  // namespace

int ibPortMain(int argc, char** argv) {
  const Flags flags = parseFlags(argc, argv,
                                 {{"node", "port", "ca", "ca-port", "timeout-ms", "retries"},
                                  {"help", "query", "disable", "enable"}});
  if (!flags.error.empty()) {
    std::fprintf(stderr, "fabric-chaos ib-port: %s\n\n%s", flags.error.c_str(), kIbPortUsage);
    return 2;
  }
  if (flags.has("help")) {
    std::fputs(kIbPortUsage, stdout);
    return 0;
  }
  const int actions = flags.has("query") + flags.has("disable") + flags.has("enable");
  if (actions != 1 || !flags.has("node") || !flags.has("port")) {
    std::fprintf(stderr,
                 "fabric-chaos ib-port: needs --node, --port and one of --query, --disable, "
                 "--enable\n\n%s",
                 kIbPortUsage);
    return 2;
  }
  int64_t port = 0;
  int64_t ca_port = 1;
  int64_t timeout_ms = 100;
  int64_t retries = 2;
  if (!readIntFlag(flags, "ib-port", "port", 1, 254, port) ||
      !readIntFlag(flags, "ib-port", "ca-port", 1, 254, ca_port) ||
      !readIntFlag(flags, "ib-port", "timeout-ms", 1, 10000, timeout_ms) ||
      !readIntFlag(flags, "ib-port", "retries", 0, 10, retries)) {
    return 2;
  }
  const workload::IbPortAction action = flags.has("disable")  ? workload::IbPortAction::kDisable
                                        : flags.has("enable") ? workload::IbPortAction::kEnable
                                                              : workload::IbPortAction::kQuery;
  auto ib = workload::openIbManagement(flags.getOr("ca", ""), static_cast<int>(ca_port),
                                       static_cast<int>(timeout_ms), static_cast<int>(retries));
  if (!ib.isOk()) {
    std::fprintf(stderr, "fabric-chaos ib-port: %s\n", ib.status().message().c_str());
    return 1;
  }
  auto outcome = workload::actOnPort(**ib, **ib, *flags.get("node"), static_cast<int>(port), action,
                                     static_cast<int>(timeout_ms));
  if (!outcome.isOk()) {
    std::fprintf(stderr, "fabric-chaos ib-port: %s\n", outcome.status().message().c_str());
    return 1;
  }
  std::cout << workload::toJson(*outcome).dump() << std::endl;
  return 0;
}

}  // namespace fabric_chaos::app
