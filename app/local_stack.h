#pragma once
// The real injector adapters, the fault registry over them and the LocalAgent that drives both:
// what `serve` and `agent` each run faults and ranks on this host with. Members are built in
// declaration order and destroyed in reverse, so the agent never outlives what it points at.
// Built once by the main thread; not movable.

#include <signal.h>

#include <memory>
#include <string>

#include "agent/local_agent.h"
#include "injectors/registry.h"
#include "injectors/sys/links.h"
#include "injectors/sys/nftables.h"
#include "injectors/sys/process.h"
#include "injectors/sys/qdisc.h"

namespace fabric_chaos::app {

// Blocks SIGINT and SIGTERM in the calling thread (and so in every thread it starts later) and
// ignores SIGPIPE; returns the blocked set for sigwait. Call from main before any thread starts.
sigset_t blockStopSignals();

// The running fabric-chaos binary (/proc/self/exe), or "" when it cannot be read.
std::string selfExePath();

struct LocalStack {
  // `self_exe` is started as `self_exe workload ...`; rank logs go to `log_dir`.
  LocalStack(const std::string& self_exe, const std::string& log_dir);
  LocalStack(const LocalStack&) = delete;
  LocalStack& operator=(const LocalStack&) = delete;

  std::unique_ptr<sys::LinkControl> links;
  std::unique_ptr<sys::Nftables> nftables;
  std::unique_ptr<sys::Qdiscs> qdiscs;
  std::unique_ptr<injectors::Registry> registry;
  std::unique_ptr<sys::ProcessLauncher> launcher;
  agent::LocalAgent local_agent;
};

}  // namespace fabric_chaos::app
