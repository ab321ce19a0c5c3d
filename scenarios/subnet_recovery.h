#pragma once
// What an InfiniBand run's probes (workload/ib_probe.h) saw of the subnet's management during
// each step, from their events: how long after the fault a new master answered, the longest SA
// outage that began inside the fault window and whether it ended, how many ports' LIDs moved,
// and, from the rank that reads the switches' forwarding tables (workload/ib_route_watch.h), how
// long after the fault every channel-adapter pair was routable again and how much of the LFTs the
// subnet manager rewrote.
// docs/scoring.md ("InfiniBand steps") and the gate max_sm_takeover_ms read it. Pure.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace fabric_chaos::scenarios {

enum class SubnetEventKind {
  kSaUnavailable,
  kSaAvailable,
  kMasterChanged,
  kLidChanged,
  kRoutesBroken,
  kRoutesRestored,
  kLftChanged,
};

struct SubnetEvent {
  double t_ms = 0;  // run-relative
  int rank = 0;
  SubnetEventKind kind = SubnetEventKind::kSaUnavailable;
  std::string new_master;  // kMasterChanged: the new master's port GUID
  std::string old_master;  // kMasterChanged: the one it replaced
  int unroutable = 0;      // kRoutesBroken: pairs whose walk does not arrive
  int entries = 0;         // kLftChanged: entries rewritten since the pass before
  int of = 0;              // kLftChanged: entries compared
  int from_first = 0;      // kLftChanged: entries that differ from the probe's first pass
};

// A probe event as the store keeps it (kind, detail with "rank"); nullopt for any other event.
std::optional<SubnetEvent> subnetEventOf(const std::string& kind, double t_ms,
                                         const nlohmann::json& detail);

struct SubnetRecovery {
  // fault start -> the first probe round a new master answered, before `until_ms`; nullopt when
  // mastership did not change.
  std::optional<double> time_to_new_master_ms;
  std::string new_master;
  // When mastership changed: whether the last change before `until_ms` went back to the master
  // the step began with (the revert of an SM fault should bring it back); nullopt otherwise.
  std::optional<bool> master_returned;
  // The longest outage (sa_unavailable -> sa_available of one probe) that began in the fault
  // window; 0 when none did.
  double sa_outage_ms = 0;
  bool sa_restored = true;  // every outage that began in the window ended before `until_ms`
  int lid_changes = 0;      // ports whose LID moved between fault start and `until_ms`
  // fault start -> the pass that found every pair routable again, when a pass in the fault window
  // found some unroutable; nullopt when none did (or nobody read the routes).
  std::optional<double> time_to_routable_ms;
  bool routes_restored = true;  // every break that began in the window ended before `until_ms`
  int unroutable_pairs = 0;     // the most pairs a pass in the window found unroutable
  int lft_entries_changed = 0;  // entries rewritten by passes in the window (twice counts twice)
  int lft_entries_of = 0;       // entries a pass compares; 0 when no pass changed any
  // At the last rewrite in the window, how many entries differed from the routes the probe first
  // read: 0 when the subnet manager put back the original routing.
  int lft_entries_differ_after = 0;
};

// `events` in time order; the step's fault window and the end of what belongs to it (the next
// step's start, or the end of the observation).
SubnetRecovery subnetRecovery(const std::vector<SubnetEvent>& events, double fault_start_ms,
                              double fault_end_ms, double until_ms);

// {"time_to_new_master_ms", "new_master", "master_returned", "sa_outage_ms", "sa_restored",
// "lid_changes",
//  "time_to_routable_ms", "routes_restored", "unroutable_pairs", "lft_entries_changed",
//  "lft_share_changed", "lft_entries_differ_after"}
nlohmann::json toJson(const SubnetRecovery& recovery);

}  // namespace fabric_chaos::scenarios
