#pragma once
// Scenario format v1 (docs/scenarios.md): the in-memory model and its JSON codec.
// Parsing never throws to the caller: every error names the offending field ("steps[1].at_ms").
// Pure data and pure functions; safe from any thread.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "scenarios/exec_workload.h"

namespace fabric_chaos::scenarios {

using nlohmann::json;

// Upper bound of at_ms, duration_ms and max_duration_ms (one day), so that timing sums never
// overflow.
inline constexpr int64_t kMaxTimeMs = 86'400'000;

// Which end of a link a link-level fault acts on. In JSON: "switch", "host", "peer".
enum class LinkSide {
  // The switch port of a host link, as a cable or switch-port failure would; on a link between
  // two switches, its first end (the leaf's uplink port).
  kSwitch,
  kHost,  // the host's NIC; host links only
  kPeer,  // the second end of a link between two switches (the spine's port); those links only
};
std::string_view linkSideName(LinkSide side);
std::optional<LinkSide> parseLinkSide(std::string_view name);

// Exactly one of host / link / labels / sm is set; `side` picks the end of each link it selects.
// Traffic kinds (incast) read the selector as their sink, and `sources` as the hosts that send to
// it (empty: every other host of the fabric); other kinds refuse `sources`.
struct TargetSelector {
  std::string host;
  std::string link;
  std::map<std::string, std::string> labels;
  LinkSide side = LinkSide::kSwitch;
  std::vector<std::string> sources = {};
  // A traffic kind's receiving host when the selector names a switch link (hot_spot on an
  // uplink); "" = chosen by the kind (scenarios/step_targets.h).
  std::string sink = {};
  // An InfiniBand fabric's subnet manager, for sm_failover: "master" (the highest-priority SM the
  // fabric declares) or an SM's name ("sm1"). Exclusive with host, link and labels.
  std::string sm = {};
  // A process kind's (the verbs_* kinds) workload rank: its process on its host. Exclusive with
  // host, link, labels and sm.
  std::optional<int> rank = {};
  // A process kind's processes by name (/proc/PID/comm, "ib_write_bw") on `host`; "" with host:
  // every shim-loaded process there.
  std::string process = {};
  // An RDMA device kind's (rdma_*) port on the rank's or host's machine: the device ("rxe0"),
  // its port (absent: 1) and, for rdma_gid_change, the GID table index (absent: 0).
  std::string rdma_device = {};
  std::optional<int> rdma_port = {};
  std::optional<int> gid_index = {};
  // "host h1", "link h1-sw0", "labels {rack=r1}", "sm master", "rank 2", "host h1 process
  // ib_write_bw", "rank 1 rdma rxe0/1 gid 1"; "host h3 from h0, h1" with sources; "... to h3" with
  // a sink.
  std::string describe() const;
};

struct FaultStep {
  std::string kind;  // a registered fault kind, e.g. "link_flap", "packet_loss"
  TargetSelector target;
  json params = json::object();
  int64_t at_ms = 0;        // offset from the end of the baseline window
  int64_t duration_ms = 0;  // for link_flap derived from the pattern when omitted
};

struct WorkloadSpec {
  // The ring allreduce probe, or an external workload (docs/workloads.md) whose fields are `exec`.
  WorkloadKind kind = WorkloadKind::kRing;
  ExecWorkloadSpec exec;
  std::vector<std::string> hosts;  // empty = every host of the fabric
  // The ring's fields.
  std::string transport = "tcp";  // "tcp" now; "verbs" on the VM lab
  int64_t message_bytes = 1 << 20;
  int64_t compute_ms = 5;               // simulated compute between collectives
  int64_t peer_timeout_ms = 10000;      // a silent peer is reconnected after this long
  int64_t reconnect_budget_ms = 30000;  // a rank gives up after reconnecting this long
  // IPv4 DSCP of the ring's traffic (0-63): 26 puts it in a lab port's lossless class (PFC).
  int dscp = 0;
};

struct Gates {
  std::optional<double> min_score;        // 0-100
  std::optional<double> max_recovery_ms;  // every step must recover within this
  std::optional<double> min_retained;     // 0-1, busbw retained during each fault
  // >= 1: each fault's p99 iteration time may be at most this many times the baseline's p99 (a
  // hot spot that slows the ring without stopping it).
  std::optional<double> max_p99_slowdown;
  // InfiniBand runs: a step whose master SM changed must have had its new master answer within
  // this long of the fault, and no step may leave the SA unanswered (scenarios/subnet_recovery.h).
  std::optional<double> max_sm_takeover_ms;
  // InfiniBand runs: a step that left channel-adapter pairs unroutable (the IB probe's reading of
  // the switches' LFTs) must have every pair routable again within this long of the fault.
  std::optional<double> max_reroute_ms;
  bool require_survival = true;  // every rank must finish
};

// When to abort a run early (docs/scenarios.md, "stop_conditions"). Watched from the first fault
// apply to the end of the recovery window; max_duration_ms (on Scenario) is watched throughout.
struct StopConditions {
  // Abort when busbw stays below this fraction of the baseline median for for_ms (an interval with
  // no completed iteration counts as below). Unset = not watched.
  std::optional<double> min_busbw_fraction;
  int64_t for_ms = 0;
  bool on_rank_death = true;  // abort when a rank exits before the engine stops the workload
};

struct Scenario {
  int version = 1;
  std::string name;
  std::string description;
  std::string fabric;  // the fabric it is written for (its selectors name that fabric's hosts);
                       // "" = the server's default. A run request may still name another.
  WorkloadSpec workload;
  int64_t baseline_ms = 3000;
  std::vector<FaultStep> steps;
  int64_t recovery_ms = 5000;
  double tolerance = 0.10;           // "recovered" = busbw within this fraction of baseline
  int recovered_after = 5;           // ... for this many consecutive iterations
  int64_t max_duration_ms = 600000;  // also a stop condition: counted from the run's start
  Gates gates;
  StopConditions stop_conditions;

  // Time from workload start to the last revert, plus the recovery window.
  int64_t plannedDurationMs() const;
};

// Decodes and checks the fields that do not need a fabric or registry: types, ranges, required
// fields, unknown fields. kInvalidArgument naming the field on failure.
core::Result<Scenario> parseScenario(const json& doc);
json toJson(const Scenario& scenario);

// Names are used in URLs and file names: [a-z0-9][a-z0-9._-]{0,63}.
bool isValidScenarioName(const std::string& name);

}  // namespace fabric_chaos::scenarios
