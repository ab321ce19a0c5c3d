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
};

// Parses `fabric-chaos workload` arguments (--rank, --world, --listen ADDR:PORT,
// --next ADDR:PORT, --bytes, --compute-ms, --peer-timeout-ms, --reconnect-budget-ms,
// --duration-s, --transport). kInvalidArgument naming the flag.
core::Result<RankOptions> parseRankArgs(int argc, char** argv);
std::string rankUsage();

// Runs the rank, writing report lines (workload/report.h) to out. Returns 0 on a normal finish,
// non-zero when the ring could not be (re)formed within the budget.
int runRank(const RankOptions& options, std::ostream& out, const std::atomic<bool>& stop);

}  // namespace fabric_chaos::workload
