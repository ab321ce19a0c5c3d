#include "app/pfc_switch_stats.h"

#include "injectors/sys/pfc_gate.h"

namespace fabric_chaos::app {

nlohmann::json pfcSwitchStatsJson(const lab::PfcSwitchModel& model,
                                  const lab::PfcPausePropagation& propagation, sys::PfcGate& gate,
                                  int64_t now_ns, uint64_t send_failures,
                                  const PfcSettingsStatus& settings) {
  nlohmann::json ports = nlohmann::json::object();
  for (size_t i = 0; i < model.ports().size(); ++i) {
    const lab::PfcPortSpec& spec = model.ports()[i];
    const lab::PfcPortCounters c = model.counters(i, now_ns);
    nlohmann::json port;
    nlohmann::json paused = nlohmann::json::array();
    nlohmann::json storms = nlohmann::json::array();
    nlohmann::json pausing = nlohmann::json::array();
    auto gate_counts = gate.counts(spec.ifindex);
    for (int p = 0; p < lab::kPfcPriorityCount; ++p) {
      const std::string prio = "prio" + std::to_string(p);
      port["rx_" + prio + "_pause"] = c.rx_pause[p];
      port["rx_" + prio + "_pause_duration"] = c.rx_pause_duration_us[p];
      port["tx_" + prio + "_pause"] = propagation.txPause(i, p);  // XON included
      port["rx_" + prio + "_pause_ignored"] = c.rx_pause_ignored[p];
      port[prio + "_held_frames"] = c.held_frames[p];
      port[prio + "_released_frames"] = c.released_frames[p];
      uint64_t dropped = c.dropped_frames[p];
      if (gate_counts.isOk()) {
        dropped += gate_counts->dropped_no_room[p] + gate_counts->dropped_oversize[p];
      }
      port[prio + "_pause_dropped_frames"] = dropped;
      // SONiC's pfcwd queue counters, and when (CLOCK_MONOTONIC ns) it last acted; zero on a
      // port whose watchdog never ran.
      port["pfcwd_" + prio + "_storm_detected"] = c.storms_detected[p];
      port["pfcwd_" + prio + "_storm_restored"] = c.storms_restored[p];
      port["pfcwd_" + prio + "_dropped_frames"] = c.watchdog_dropped_frames[p];
      port["pfcwd_" + prio + "_last_detected_ns"] = c.last_detected_ns[p];
      port["pfcwd_" + prio + "_last_restored_ns"] = c.last_restored_ns[p];
      if (model.paused(i, p)) paused.push_back(p);
      if (model.inStorm(i, p)) storms.push_back(p);
      if (propagation.pausing(i, p)) pausing.push_back(p);
    }
    port["paused_priorities"] = paused;
    port["storm_priorities"] = storms;
    port["pausing_priorities"] = pausing;  // this port's neighbour is paused on these by us
    port["pfc_enabled"] = spec.pfc_enabled;
    port["watchdog"] = spec.watchdog ? nlohmann::json(injectors::formatPfcWatchdog(*spec.watchdog))
                                     : nlohmann::json(nullptr);
    ports[spec.name] = port;
  }
  nlohmann::json out = {{"monotonic_ns", now_ns},
                        {"xoff_bytes", propagation.thresholds().xoff_bytes},
                        {"xon_bytes", propagation.thresholds().xon_bytes},
                        {"ports", ports},
                        {"send_failures", send_failures},
                        {"settings_reads", settings.reads},
                        {"settings_generation", settings.generation}};
  if (!settings.error.empty()) out["settings_error"] = settings.error;
  return out;
}

}  // namespace fabric_chaos::app
