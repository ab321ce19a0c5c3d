#include <signal.h>

#include <atomic>
#include <cstdio>
#include <iostream>

#include "app/cli.h"
#include "app/stop_signals.h"
#include "workload/rank.h"

namespace fabric_chaos::app {
namespace {

// Set from the SIGTERM/SIGINT handler: the rank finishes its iteration, flushes and exits 0.
std::atomic<bool> g_stop_requested{false};

void requestStop(int) { g_stop_requested = true; }

}  // namespace

int workloadMain(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--help") {
      std::cout << workload::rankUsage();
      return 0;
    }
  }
  auto options = workload::parseRankArgs(argc, argv);
  if (!options.isOk()) {
    std::fprintf(stderr, "fabric-chaos workload: %s\n\n%s", options.status().message().c_str(),
                 workload::rankUsage().c_str());
    return 2;
  }
  installStopHandlers(requestStop);
  signal(SIGPIPE, SIG_IGN);
  return workload::runRank(options.value(), std::cout, g_stop_requested);
}

}  // namespace fabric_chaos::app
