#pragma once
// What a lab switch's PFC agent (`fabric-chaos pfc-switch`, app/pfc_switch_cmd.cc) lets others
// change while it runs: per port, the priorities it honours pause frames for and its PFC
// watchdog. The agent writes the file at start from its command line (generation 0) and reads it
// again on SIGHUP; whoever changes it (the pfc_config and pfc_watchdog faults, through
// injectors/sys/pfc_switch_control.h) raises the generation, and the agent's counters file
// reports the generation in force, so that a change is known to be applied, not only written.
// Pure; any thread.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/status.h"
#include "injectors/model/pfc_watchdog_config.h"

namespace fabric_chaos::injectors {

struct PfcPortSettings {
  uint8_t pfc_enabled = 0xff;  // bit p: pause frames of priority p are honoured
  std::optional<PfcWatchdogConfig> watchdog;
  bool operator==(const PfcPortSettings&) const = default;
};

struct PfcSwitchSettings {
  int64_t generation = 0;
  std::map<std::string, PfcPortSettings> ports;  // by port name
  bool operator==(const PfcSwitchSettings&) const = default;
};

// {"generation": 3, "ports": {"p1": {"pfc_enabled": 247, "watchdog": "drop:200:200"}}}; a port
// without a watchdog has "watchdog": null.
nlohmann::json toJson(const PfcPortSettings& port);
nlohmann::json toJson(const PfcSwitchSettings& settings);
// kInvalidArgument naming the field.
core::Result<PfcPortSettings> pfcPortSettingsFromJson(const nlohmann::json& doc);
core::Result<PfcSwitchSettings> pfcSwitchSettingsFromJson(const nlohmann::json& doc);

// The settings file at `path`, read and checked: what the agent reads on SIGHUP and what a writer
// changes. Errors name the file.
core::Result<PfcSwitchSettings> readPfcSwitchSettings(const std::string& path);

}  // namespace fabric_chaos::injectors
