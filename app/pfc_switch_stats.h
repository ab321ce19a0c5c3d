#pragma once
// The PFC agent's counters file (`pfc-switch --stats`, docs/lab.md "PFC"): per port, the
// counters under the names operators read from NICs and SONiC's pfcwd, what is paused or in a
// storm, what this switch pauses upstream (pause propagation), and the settings in force; rewritten
// a few times a second, read by the switch telemetry (lab/switch_telemetry.h) and by the faults
// that change the settings.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "lab/pfc_propagation.h"
#include "lab/pfc_switch_model.h"

namespace fabric_chaos::sys {
class PfcGate;
}  // namespace fabric_chaos::sys

namespace fabric_chaos::app {

// The settings file's state (`--settings`): how many times it was read again (SIGHUP), the
// generation in force, and why the last read was refused ("" when it was not). A writer waits for
// the reads to pass the count it saw before signalling, then checks the generation.
struct PfcSettingsStatus {
  int64_t reads = 0;
  int64_t generation = 0;
  std::string error;
};

nlohmann::json pfcSwitchStatsJson(const lab::PfcSwitchModel& model,
                                  const lab::PfcPausePropagation& propagation, sys::PfcGate& gate,
                                  int64_t now_ns, uint64_t send_failures,
                                  const PfcSettingsStatus& settings);

}  // namespace fabric_chaos::app
