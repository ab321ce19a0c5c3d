#pragma once
// `fabric-chaos pfc-switch`'s command line (app/pfc_switch_cmd.cc): the usage text, the parsed
// options, and the settings the agent starts with.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "injectors/model/pfc_switch_settings.h"
#include "injectors/model/pfc_watchdog_config.h"

namespace fabric_chaos::app {

extern const char kPfcSwitchUsage[];

struct PfcSwitchOptions {
  std::vector<std::string> ports;
  int64_t rate_bps = 0;
  int64_t buffer_bytes = 0;
  uint64_t lossless_dscp_mask = uint64_t{1} << 26;
  int lossless_priority = 3;
  std::map<std::string, uint8_t> pfc_enabled;
  std::string stats_path;
  std::string settings_path;
  std::string netns_file;
  std::string pid_path;
  std::string log_path;
  std::optional<injectors::PfcWatchdogConfig> watchdog;
  // Pause propagation (lab/pfc_propagation.h): a paused queue holding xoff_bytes pauses the ports
  // feeding it until it holds no more than xon_bytes. Default half the buffer and a quarter; 0
  // xoff: never.
  int64_t xoff_bytes = 0;
  int64_t xon_bytes = 0;
  bool daemon = false;
};

// argv without the subcommand. kInvalidArgument naming the flag.
core::Result<PfcSwitchOptions> parsePfcSwitchOptions(int argc, char** argv);

// Generation 0: every port's --pfc-enabled mask (all priorities by default) and --watchdog.
injectors::PfcSwitchSettings initialPfcSwitchSettings(const PfcSwitchOptions& options);

}  // namespace fabric_chaos::app
