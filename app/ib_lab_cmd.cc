#include "app/ib_lab_cmd.h"

#include <cstdio>
#include <iostream>
#include <limits>

#include "core/command_line.h"
#include "injectors/sys/command.h"
#include "lab/ib_lab.h"

namespace fabric_chaos::app {

const char* const kIbLabOnlyFlags[5] = {"subnet-managers", "sm-polling-ms", "sm-retries",
                                        "switch-ports", "ready-timeout"};

namespace {

void print(const std::string& line) { std::cout << line << std::endl; }

bool readInt(const Flags& flags, const std::string& name, int& out) {
  return readIntFlag(flags, "lab", name, out);
}

}  // namespace

int ibLabMain(const Flags& flags, const std::string& action) {
  for (const char* other : {"hosts", "rails", "link-rate", "buffer", "lossless-dscp", "ecn", "pfc",
                            "pfc-priority", "pfc-watchdog", "cache-dir", "mem", "agent-command",
                            "no-agent", "guest-init", "boot-timeout", "base-port"}) {
    if (flags.has(other)) {
      std::fprintf(stderr,
                   "fabric-chaos lab: --%s is not for the IB lab (--kind ib takes --leaves, "
                   "--spines, --hosts-per-leaf, --switch-ports, --subnet-managers, "
                   "--sm-polling-ms, --sm-retries, --ready-timeout)\n",
                   other);
      return 2;
    }
  }
  const std::string topology = flags.getOr("topology", "fat-tree");
  if (topology != "fat-tree") {
    std::fprintf(stderr, "fabric-chaos lab: the IB lab's --topology is fat-tree, not \"%s\"\n",
                 topology.c_str());
    return 2;
  }
  lab::IbLabOptions options;
  options.state_dir = flags.getOr("state-dir", options.state_dir);
  int ready_timeout_s = options.ready_timeout_ms / 1000;
  if (!readInt(flags, "leaves", options.shape.leaves) ||
      !readInt(flags, "spines", options.shape.spines) ||
      !readInt(flags, "hosts-per-leaf", options.shape.hosts_per_leaf) ||
      !readInt(flags, "switch-ports", options.shape.switch_ports) ||
      !readInt(flags, "subnet-managers", options.subnet_managers) ||
      !readInt(flags, "sm-polling-ms", options.sm_polling_timeout_ms) ||
      !readInt(flags, "sm-retries", options.sm_polling_retries) ||
      !readInt(flags, "ready-timeout", ready_timeout_s)) {
    return 2;
  }
  if (ready_timeout_s < 1 || ready_timeout_s > 3600) {
    std::fprintf(stderr, "fabric-chaos lab: --ready-timeout must be 1..3600 seconds\n");
    return 2;
  }
  options.ready_timeout_ms = ready_timeout_s * 1000;
  if (action == "up") {
    if (auto valid = lab::checkIbLabOptions(options); !valid.isOk()) {
      std::fprintf(stderr, "fabric-chaos lab up: %s\n", valid.message().c_str());
      return 2;
    }
  }
  auto runner = sys::makeCommandRunner();
  auto daemons = sys::makeDaemonControl();
  lab::IbLab lab(*runner, *daemons, options);
  if (action == "up") {
    auto fabric = lab.up(print);
    if (!fabric.isOk()) return labOutcome("up", fabric.status());
    for (const auto& sm : fabric->ib->subnet_managers) {
      std::cout << "  " << sm.name << "  on " << sm.host << "  priority " << sm.priority
                << "  port " << sm.port_guid << "\n";
    }
    std::cout << "  fabric file " << lab.fabricFile() << "\n";
    return 0;
  }
  if (action == "down") {
    auto status = lab.down(print);
    return labOutcome("down", status);
  }
  auto status = lab.status();
  if (!status.isOk()) return labOutcome("status", status.status());
  std::cout << (status->up ? "up" : "down") << " (namespace "
            << (status->netns_present ? "present" : "absent") << ", " << status->processes
            << " processes in it; fabric file " << status->fabric_file << ")\n";
  return status->up ? 0 : 3;
}

}  // namespace fabric_chaos::app
