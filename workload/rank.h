#pragma once
// One rank of a ring allreduce (reduce-scatter then all-gather, 2(n-1) steps over float32
// buffers) timed per iteration with the steady clock. A lost or silent peer is not fatal: the rank
// tears its ring connections down (which its neighbours notice), re-forms the ring and restarts the
// iteration, recording the stall as an event, until reconnect_budget_ms runs out.
// runRank() blocks; it returns when max_duration_ms has passed or stop is requested.

#include <atomic>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include "core/status.h"

namespace fabric_chaos::workload {

struct RankOptions {
  int rank = 0;
  int world = 1;
  std::string listen_addr = "127.0.0.1";
  int listen_port = 0;
  std::string next_addr = "127.0.0.1";
  int next_port = 0;
  int64_t message_bytes = 1 << 20;
  int64_t compute_ms = 5;
  int64_t peer_timeout_ms = 10000;
  int64_t reconnect_budget_ms = 30000;
  int64_t max_duration_ms = 600000;
  int64_t flush_interval_ms = 100;  // how often samples are written out
  std::string transport = "tcp";
  int dscp = 0;  // IPv4 DSCP of the ring's packets (TCP: IP_TOS; verbs: the RoCE traffic class)
};

// Parses `fabric-chaos workload` arguments (--rank, --world, --listen ADDR:PORT,
// --next ADDR:PORT, --bytes, --compute-ms, --peer-timeout-ms, --reconnect-budget-ms,
// --duration-s, --flush-ms, --transport; also --flag=value). argv[0] is the subcommand name and is
// skipped, as main() skips the program name. kInvalidArgument naming the flag.
core::Result<RankOptions> parseRankArgs(int argc, char** argv);
std::string rankUsage();

// Checks what parseRankArgs checks, for options built in code. kInvalidArgument naming the flag.
core::Status validateRankOptions(const RankOptions& options);

// Runs the rank, writing report lines (workload/report.h) to out; the last line is always done.
// Returns 0 on a normal finish (stop or max_duration_ms), 1 when the ring could not be (re)formed
// within the budget or `out` failed (the agent is gone), 2 for invalid options. Reads stdout-like
// `out` from its own thread only; `stop` may be set from any thread (e.g. a SIGTERM handler).
int runRank(const RankOptions& options, std::ostream& out, const std::atomic<bool>& stop);

// Test seams, unused in production: they let a test freeze a rank or make it drop its
// connections the way a crashed host would.
struct RankHooks {
  // Called on the rank's thread before each new iteration (not before a restarted one); it may
  // block, which makes the rank look hung to its neighbours.
  std::function<void(int64_t iteration)> before_iteration;
  // See TcpRingOptions::abort_connections (workload/sys/tcp_ring.h).
  std::atomic<bool>* abort_connections = nullptr;
};
int runRank(const RankOptions& options, std::ostream& out, const std::atomic<bool>& stop,
            const RankHooks& hooks);

}  // namespace fabric_chaos::workload
