#include "scenarios/subnet_recovery.h"

#include <algorithm>
#include <map>

namespace fabric_chaos::scenarios {
namespace {

int intField(const nlohmann::json& detail, const char* name) {
  if (!detail.is_object() || !detail.contains(name) || !detail[name].is_number_integer()) return 0;
  return detail[name].get<int>();
}

}  // namespace

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
    if (detail.is_object() && detail.contains("from") && detail["from"].is_string()) {
      event.old_master = detail["from"].get<std::string>();
    }
  } else if (kind == "lid_changed") {
    event.kind = SubnetEventKind::kLidChanged;
  } else if (kind == "routes_broken") {
    event.kind = SubnetEventKind::kRoutesBroken;
    event.unroutable = intField(detail, "unroutable");
  } else if (kind == "routes_restored") {
    event.kind = SubnetEventKind::kRoutesRestored;
  } else if (kind == "lft_changed") {
    event.kind = SubnetEventKind::kLftChanged;
    event.entries = intField(detail, "entries");
    event.of = intField(detail, "of");
    event.from_first = intField(detail, "from_first");
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
  bool routes_broken = false;         // a break that began in the fault window is open
  std::string original_master;        // the master before the window's first change
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
          original_master = e.old_master;
        }
        out.master_returned = e.new_master == original_master;
        break;
      case SubnetEventKind::kLidChanged:
        ++out.lid_changes;
        break;
      case SubnetEventKind::kRoutesBroken:
        if (e.t_ms <= fault_end_ms) routes_broken = true;
        out.unroutable_pairs = std::max(out.unroutable_pairs, e.unroutable);
        break;
      case SubnetEventKind::kRoutesRestored:
        // The last restoration counts: a flap may break and mend the routes more than once.
        if (routes_broken) out.time_to_routable_ms = e.t_ms - fault_start_ms;
        routes_broken = false;
        break;
      case SubnetEventKind::kLftChanged:
        out.lft_entries_changed += e.entries;
        out.lft_entries_of = e.of;
        out.lft_entries_differ_after = e.from_first;
        break;
    }
  }
  if (routes_broken) out.routes_restored = false;
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
          {"master_returned", recovery.master_returned ? nlohmann::json(*recovery.master_returned)
                                                       : nlohmann::json(nullptr)},
          {"sa_outage_ms", recovery.sa_outage_ms},
          {"sa_restored", recovery.sa_restored},
          {"lid_changes", recovery.lid_changes},
          {"time_to_routable_ms", recovery.time_to_routable_ms
                                      ? nlohmann::json(*recovery.time_to_routable_ms)
                                      : nlohmann::json(nullptr)},
          {"routes_restored", recovery.routes_restored},
          {"unroutable_pairs", recovery.unroutable_pairs},
          {"lft_entries_changed", recovery.lft_entries_changed},
          {"lft_share_changed",
           recovery.lft_entries_of > 0
               ? static_cast<double>(recovery.lft_entries_changed) / recovery.lft_entries_of
               : 0.0},
          {"lft_entries_differ_after", recovery.lft_entries_differ_after}};
}

}  // namespace fabric_chaos::scenarios
