// `fabric-chaos traffic sink|source`: the traffic generator, started as a long-running emitter by
// the incast and hot-spot faults (injectors/sys/emitters.h) or by hand. This file parses the
// command line and hands over to the loop of the chosen transport (app/traffic_loop.h).
// A report line goes to stdout every --report-ms; the last one, with "final":true, on SIGTERM,
// SIGINT or --duration-s. Its parent's exit does not stop it (a shell's `&` or a daemonizing
// launcher would end it at once); an emitter is tied to its supervisor by PR_SET_PDEATHSIG.

#include <cstdio>
#include <string>
#include <vector>

#include "app/cli.h"
#include "app/traffic_loop.h"
#include "core/command_line.h"
#include "workload/traffic.h"

namespace fabric_chaos::app {

int trafficMain(int argc, char** argv) {
  const sigset_t wait_mask = installTrafficStopHandlers();
  const std::vector<std::string> args = core::commandLineArgs(argc, argv, 1);
  if (workload::trafficWantsHelp(args)) {
    std::fputs(workload::trafficUsage().c_str(), stdout);
    return 0;
  }
  auto options = workload::parseTrafficArgs(args);
  if (!options.isOk()) {
    std::fprintf(stderr, "fabric-chaos traffic: %s\n\n%s", options.status().message().c_str(),
                 workload::trafficUsage().c_str());
    return 2;
  }
  const bool sink = options->role == workload::TrafficRole::kSink;
  if (options->transport == workload::TrafficTransport::kVerbs) {
    return sink ? runVerbsSink(*options, wait_mask) : runVerbsSource(*options, wait_mask);
  }
  return sink ? runTcpSink(*options, wait_mask) : runTcpSource(*options, wait_mask);
}

}  // namespace fabric_chaos::app
