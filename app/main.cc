// fabric-chaos: one binary, several roles. See --help.

#include <cstdio>
#include <cstring>
#include <string>

#include "app/cli.h"
#include "app/version.h"

// The CI client (app/run_cmd.cc).
namespace fabric_chaos::app {
int runMain(int argc, char** argv);
}  // namespace fabric_chaos::app

namespace {

constexpr const char* kUsage =
    R"(fabric-chaos )" FABRIC_CHAOS_VERSION R"( - chaos testing for AI-training networks

Usage: fabric-chaos <command> [options]

Commands:
  serve      REST API, scheduler, SQLite store and dashboard, with an embedded local agent
  agent      the per-host agent a remote controller drives over HTTP (VM lab, real hosts)
  agent-sim  many simulated agents in one process, to measure a controller at fleet scale
  lab        build a test fabric on this machine: lab up [--hosts N] | lab down | lab status
  workload   run one rank of the ring-allreduce probe (started by agents)
  exec-rank  run one rank of an external workload and report its steps (started by agents)
  workload-script NAME  print a shipped workload script (pytorch-ddp)
  run        the CI client: start a scenario or suite on a server, follow it, exit 0/1/2
  pfc-emit   send 802.1Qbb PFC pause frames on an interface (the pfc_storm fault's emitter)
  pfc-switch the PFC agent of a lab switch: ports pause on the 802.1Qbb frames they receive
  traffic    TCP traffic: traffic sink | traffic source (the incast/hot-spot aggressor)
  fabric     fabric import --ibnetdiscover FILE: an InfiniBand subnet's description
  ib-probe   probe an InfiniBand subnet's SM and SA every period (the IB lab's workload rank)
  ib-port    read, disable or enable an IB switch port by direct route (ib_link_down on real subnets)
  --version  print the version
  --help     this text

Run `fabric-chaos <command> --help` for a command's options.
)";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string command = argv[1];
  if (command == "--version" || command == "version") {
    std::printf("fabric-chaos %s\n", FABRIC_CHAOS_VERSION);
    return 0;
  }
  if (command == "--help" || command == "-h" || command == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (command == "serve") return fabric_chaos::app::serveMain(argc - 2, argv + 2);
  if (command == "agent") return fabric_chaos::app::agentMain(argc - 2, argv + 2);
  if (command == "agent-sim") return fabric_chaos::app::agentSimMain(argc - 2, argv + 2);
  if (command == "run") return fabric_chaos::app::runMain(argc - 2, argv + 2);
  if (command == "lab") return fabric_chaos::app::labMain(argc - 2, argv + 2);
  // The rank parser expects the subcommand name as argv[0].
  if (command == "workload") return fabric_chaos::app::workloadMain(argc - 1, argv + 1);
  // argv[0] is the subcommand for both.
  if (command == "exec-rank") return fabric_chaos::app::execRankMain(argc - 1, argv + 1);
  if (command == "workload-script") {
    return fabric_chaos::app::workloadScriptMain(argc - 1, argv + 1);
  }
  if (command == "pfc-emit") return fabric_chaos::app::pfcEmitMain(argc - 1, argv + 1);
  if (command == "pfc-switch") return fabric_chaos::app::pfcSwitchMain(argc - 1, argv + 1);
  if (command == "traffic") return fabric_chaos::app::trafficMain(argc - 1, argv + 1);
  if (command == "fabric") return fabric_chaos::app::fabricMain(argc - 2, argv + 2);
  if (command == "ib-probe") return fabric_chaos::app::ibProbeMain(argc - 2, argv + 2);
  if (command == "ib-port") return fabric_chaos::app::ibPortMain(argc - 2, argv + 2);
  std::fprintf(stderr, "fabric-chaos: unknown command \"%s\"\n\n%s", command.c_str(), kUsage);
  return 2;
}
