#pragma once
// The PFC watchdog of the lab switch, with SONiC pfcwd's semantics and defaults (docs/lab.md,
// "PFC watchdog"), as the fabric description (a lab's default) and the pfc_watchdog fault (one
// port, for a step) configure it: a port's priority that stays paused for the detection time is in
// a PFC storm, and the watchdog acts on it until no pause frame has arrived for the restoration
// time.
// - drop: the queue's frames, and every further frame of that priority to that port, are dropped,
//   and its pause frames are ignored;
// - forward: its pause frames are ignored and its frames flow again;
// - alert: the storm is only recorded; the port stays paused.
// This file holds the configuration and its text form; lab/pfc_switch_model.h applies it. Pure;
// any thread.

#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"

namespace fabric_chaos::injectors {

enum class PfcWatchdogAction { kDrop, kForward, kAlert };

struct PfcWatchdogConfig {
  PfcWatchdogAction action = PfcWatchdogAction::kDrop;
  int64_t detection_ms = 200;    // SONiC's default; its CLI allows 100-5000
  int64_t restoration_ms = 200;  // SONiC's default; its CLI allows 100-60000
  bool operator==(const PfcWatchdogConfig&) const = default;
};

inline constexpr int64_t kPfcWatchdogMinDetectionMs = 100;
inline constexpr int64_t kPfcWatchdogMaxDetectionMs = 5000;
inline constexpr int64_t kPfcWatchdogMinRestorationMs = 100;
inline constexpr int64_t kPfcWatchdogMaxRestorationMs = 60000;

// "drop", "forward", "alert", optionally followed by ":DETECTION_MS" and ":RESTORATION_MS"
// ("drop:400:2000"). kInvalidArgument names the part and its range.
core::Result<PfcWatchdogConfig> parsePfcWatchdog(const std::string& text);

// The same form back: "drop:200:200".
std::string formatPfcWatchdog(const PfcWatchdogConfig& config);

const char* pfcWatchdogActionName(PfcWatchdogAction action);
std::optional<PfcWatchdogAction> parsePfcWatchdogAction(const std::string& name);

}  // namespace fabric_chaos::injectors
