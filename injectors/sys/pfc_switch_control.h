#pragma once
// The running PFC agents of lab switches (`fabric-chaos pfc-switch`, one per switch namespace),
// as the pfc_config and pfc_watchdog faults reach them: read a port's settings in force, and
// change them (injectors/model/pfc_switch_settings.h). The agent is found among the processes of
// the namespace (its command line names its --settings and --stats files), so that any process
// of this host can reach it, whatever state directory the lab was brought up with. A change
// raises the file's generation under a lock, signals the agent (SIGHUP) and returns once the
// agent's counters report that generation in force.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/status.h"
#include "injectors/model/pfc_switch_settings.h"

namespace fabric_chaos::sys {

class PfcSwitchControl {
 public:
  virtual ~PfcSwitchControl() = default;
  // The settings in force on `port` of the agent running in `netns`. kNotFound when no PFC agent
  // runs there or it has no such port.
  virtual core::Result<injectors::PfcPortSettings> read(const std::string& netns,
                                                        const std::string& port) = 0;
  // Change one setting of the port, leaving the other as it is (a pfc_config and a pfc_watchdog
  // fault may hold the same port); each returns once the agent applied it. kNotFound as read();
  // kInvalidArgument with the agent's reason when it refused the file; kTimeout when it did not
  // answer.
  virtual core::Status setPfcEnabled(const std::string& netns, const std::string& port,
                                     uint8_t mask) = 0;
  virtual core::Status setWatchdog(const std::string& netns, const std::string& port,
                                   const std::optional<injectors::PfcWatchdogConfig>& watchdog) = 0;
};

// ack_timeout_ms: how long write() waits for the agent to report the new generation.
std::unique_ptr<PfcSwitchControl> makeProcessPfcSwitchControl(int ack_timeout_ms = 3000);

}  // namespace fabric_chaos::sys
