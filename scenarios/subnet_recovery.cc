#include "scenarios/subnet_recovery.h"

#include <algorithm>
#include <map>

namespace fabric_chaos::scenarios {

std::optional<SubnetEvent> subnetEventOf(const std::string& kind, double t_ms,
                                         const nlohmann::json& detail) {
  SubnetEvent event;
  if (kind == "sa_unavailable") {
    event.kind = SubnetEventKind::kSaUnavailable;
  } else if (kind == "sa_available") {
    event.kind = SubnetEventKind::kSaAvailable;
  } else if (kind == "sm_master_changed") {
    event.kind = SubnetEventKind::kMasterChanged;
    if (detail.is_object() && detail.contains("to") && detail["to"].is_string()) {
      event.new_master = detail["to"].get<std::string>();
    }
  } else if (kind == "lid_changed") {
    event.kind = SubnetEventKind::kLidChanged;
  } else {
    return std::nullopt;
  }
  event.t_ms = t_ms;
  if (detail.is_object() && detail.contains("rank") && detail["rank"].is_number_integer()) {
    event.rank = detail["rank"].get<int>();
  }
  return event;
}

SubnetRecovery subnetRecovery(const std::vector<SubnetEvent>& events, double fault_start_ms,
                              double fault_end_ms, double until_ms) {
  SubnetRecovery out;
  std::map<int, double> open_outage;  // rank -> when its outage began (in the window)
  for (const SubnetEvent& e : events) {
    if (e.t_ms < fault_start_ms || e.t_ms >= until_ms) continue;
    switch (e.kind) {
      case SubnetEventKind::kSaUnavailable:
        if (e.t_ms <= fault_end_ms) open_outage.emplace(e.rank, e.t_ms);
        break;
      case SubnetEventKind::kSaAvailable:
        if (auto it = open_outage.find(e.rank); it != open_outage.end()) {
          out.sa_outage_ms = std::max(out.sa_outage_ms, e.t_ms - it->second);
          open_outage.erase(it);
        }
        break;
      case SubnetEventKind::kMasterChanged:
        if (!out.time_to_new_master_ms) {
          out.time_to_new_master_ms = e.t_ms - fault_start_ms;
          out.new_master = e.new_master;
        }
        break;
      case SubnetEventKind::kLidChanged:
        ++out.lid_changes;
        break;
    }
  }
  for (const auto& [rank, since] : open_outage) {
    out.sa_restored = false;
    out.sa_outage_ms = std::max(out.sa_outage_ms, until_ms - since);
  }
  return out;
}

nlohmann::json toJson(const SubnetRecovery& recovery) {
  return {{"time_to_new_master_ms", recovery.time_to_new_master_ms
                                        ? nlohmann::json(*recovery.time_to_new_master_ms)
                                        : nlohmann::json(nullptr)},
          {"new_master", recovery.new_master},
          {"sa_outage_ms", recovery.sa_outage_ms},
          {"sa_restored", recovery.sa_restored},
          {"lid_changes", recovery.lid_changes}};
}

}  // namespace fabric_chaos::scenarios
