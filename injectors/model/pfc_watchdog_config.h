#pragma once
// The PFC watchdog of the lab switch, with SONiC pfcwd's semantics and defaults (docs/lab.md,
// "PFC watchdog"): a port's priority that stays paused for the detection time is in a PFC storm,
// and the watchdog acts on it until no pause frame has arrived for the restoration time.
// - drop: the queue's frames, and every further frame of that priority to that port, are dropped,
//   and its pause frames are ignored;
// - forward: its pause frames are ignored and its frames flow again;
// - alert: the storm is only recorded; the port stays paused.
// The configuration is scenarios::PfcWatchdogConfig (part of the fabric description); this file
// reads and writes its text form, and lab/pfc_switch_model.h applies it. Pure; any thread.

#include <cstdint>
#include <string>

#include "core/status.h"
#include "scenarios/topology.h"

namespace fabric_chaos::lab {

using scenarios::PfcWatchdogAction;
using scenarios::PfcWatchdogConfig;

// "drop", "forward", "alert", optionally followed by ":DETECTION_MS" and ":RESTORATION_MS"
// ("drop:400:2000"). kInvalidArgument names the part and its range.
core::Result<PfcWatchdogConfig> parsePfcWatchdog(const std::string& text);

// The same form back: "drop:200:200".
std::string formatPfcWatchdog(const PfcWatchdogConfig& config);

const char* pfcWatchdogActionName(PfcWatchdogAction action);

}  // namespace fabric_chaos::lab
