#pragma once
// Reaching the simulated IB lab's ibsim from an agent: the ibsim process running in a named
// network namespace, and its console, which is that process's stdin (a FIFO the lab holds open;
// /proc/PID/fd/0 reaches it without knowing its path). The IB port kinds and sm_failover's
// port_down mode send it commands ("Unlink \"l0\"[3]"). Stateless; as thread-safe as the
// DaemonControl it is given.

#include <sys/types.h>

#include <string>

#include "core/status.h"
#include "injectors/sys/daemon_control.h"

namespace fabric_chaos::injectors {

// The pid of the ibsim in `netns`: kFailedPrecondition naming the namespace when none runs
// there (the IB lab is down), or when several do.
core::Result<pid_t> findSimulator(sys::DaemonControl& daemons, const std::string& netns);

// Sends one console command to the ibsim in `netns`.
core::Status sendSimulatorCommand(sys::DaemonControl& daemons, const std::string& netns,
                                  const std::string& command);

// The console commands, with ibsim's quoting: `Unlink "l0"[3]`, `ReLink "l0"[3]`,
// `Error "l0"[3] 20`.
std::string unlinkCommand(const std::string& node, int port);
std::string relinkCommand(const std::string& node, int port);
std::string errorRateCommand(const std::string& node, int port, int percent);

}  // namespace fabric_chaos::injectors
