#pragma once
// What an InfiniBand run's probes (workload/ib_probe.h) saw of the subnet's management during
// each step, from their events: how long after the fault a new master answered, the longest SA
// outage that began inside the fault window and whether it ended, and how many ports' LIDs moved.
// docs/scoring.md ("InfiniBand steps") and the gate max_sm_takeover_ms read it. Pure.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace fabric_chaos::scenarios {

enum class SubnetEventKind { kSaUnavailable, kSaAvailable, kMasterChanged, kLidChanged };

struct SubnetEvent {
  double t_ms = 0;  // run-relative
  int rank = 0;
  SubnetEventKind kind = SubnetEventKind::kSaUnavailable;
  std::string new_master;  // kMasterChanged: the new master's port GUID
};

// A probe event as the store keeps it (kind, detail with "rank"); nullopt for any other event.
std::optional<SubnetEvent> subnetEventOf(const std::string& kind, double t_ms,
                                         const nlohmann::json& detail);

struct SubnetRecovery {
  // fault start -> the first probe round a new master answered, before `until_ms`; nullopt when
  // mastership did not change.
  std::optional<double> time_to_new_master_ms;
  std::string new_master;
  // The longest outage (sa_unavailable -> sa_available of one probe) that began in the fault
  // window; 0 when none did.
  double sa_outage_ms = 0;
  bool sa_restored = true;  // every outage that began in the window ended before `until_ms`
  int lid_changes = 0;      // ports whose LID moved between fault start and `until_ms`
};

// `events` in time order; the step's fault window and the end of what belongs to it (the next
// step's start, or the end of the observation).
SubnetRecovery subnetRecovery(const std::vector<SubnetEvent>& events, double fault_start_ms,
                              double fault_end_ms, double until_ms);

// {"time_to_new_master_ms", "new_master", "sa_outage_ms", "sa_restored", "lid_changes"}
nlohmann::json toJson(const SubnetRecovery& recovery);

}  // namespace fabric_chaos::scenarios
