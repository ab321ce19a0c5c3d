#pragma once
// The IB lab's workload: a probe that does what a training job needs from an InfiniBand subnet's
// management, every period_ms, from its own node: ask its port which SM is master (PortInfo), ask
// that SM (SMInfo, which must say MASTER) and ask the SA for a path to a peer port (PathRecord),
// as a job's new connection does. An iteration runs from one round's start to the next's: one
// period while every round gets all three answers; a failed round is retried every period and the
// iteration lasts until one succeeds, so an SA outage is a stall of exactly its length. Written
// with the workload line protocol (workload/report.h), the analysis, score and dashboard treat it
// as they treat the ring's. Events:
//   sa_unavailable     {"reason", "iteration"}  the first failed round of an outage
//   sa_available       {"after_ms", "iteration"} the round that ends it
//   sm_master_changed  {"from", "to", "lid", "priority"} (GUIDs "0x...") a new master answers
//   lid_changed        {"from", "to"} the local port's LID moved (it should not)
// With check_routes it also discovers the subnet before it reports ready and then, in the idle
// part of every period, reads every switch's forwarding table and port states, reporting whether
// every channel-adapter pair is routable and how many entries a re-route rewrote
// (workload/ib_route_watch.h lists those events; routes_unavailable {"reason"} when the discovery
// fails, after which the probe goes on without them; routes_summary {"passes", "mean_pass_ms",
// "max_pass_ms"} as it stops). One rank per subnet is enough.
// runIbProbe() blocks until max_duration_ms pass or stop is set.

#include <atomic>
#include <cstdint>
#include <ostream>

#include "workload/sys/ib_management.h"
#include "workload/sys/ib_smp.h"

namespace fabric_chaos::workload {

struct IbProbeOptions {
  int rank = 0;
  uint64_t peer_guid = 0;  // the port the PathRecord asks for; 0: the local port's own
  int64_t period_ms = 100;
  int64_t max_duration_ms = 600000;
  bool check_routes = false;
  int route_timeout_ms = 20;  // per route read: a switch answers in microseconds, ibsim in ~1 ms
  int64_t routes_period_ms = 100;  // a pass of route reads starts this often, time permitting
};

// What one round moves: two queries and their answers, 256-byte MADs each. The analysis needs a
// byte count per iteration; this one keeps "bus bandwidth" proportional to rounds per second.
inline constexpr int64_t kIbProbeBytesPerRound = 4 * 256;

inline constexpr char kEventSaUnavailable[] = "sa_unavailable";
inline constexpr char kEventSaAvailable[] = "sa_available";
inline constexpr char kEventSmMasterChanged[] = "sm_master_changed";
inline constexpr char kEventLidChanged[] = "lid_changed";
inline constexpr char kEventRoutesUnavailable[] = "routes_unavailable";
inline constexpr char kEventRoutesSummary[] = "routes_summary";

// Returns 0 after a normal finish, 1 when `out` failed (the agent is gone). `smp` reads the
// routes when options.check_routes is set (the same port as `management`).
int runIbProbe(const IbProbeOptions& options, IbManagement& management, SmpReader* smp,
               std::ostream& out, const std::atomic<bool>& stop);

}  // namespace fabric_chaos::workload
