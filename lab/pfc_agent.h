#pragma once
// Starting the PFC agent (`fabric-chaos pfc-switch`, app/pfc_switch_cmd.cc) of a lab switch whose
// egress model honours PFC (scenarios::EgressModel::pfc; docs/lab.md, "PFC"). It runs detached
// inside the switch's namespace, so it outlives `lab up`; `lab down` stops every process in the
// lab's namespaces (stopProcessesInNetns), and the agent itself exits when its namespace is
// deleted. Its counters are a JSON file in the state directory.

#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "injectors/sys/command.h"
#include "scenarios/topology.h"

namespace fabric_chaos::lab {

// <state_dir>/pfc/<switch netns>.json: the agent's counters, rewritten every 200 ms.
std::string pfcStatsFile(const std::string& state_dir, const std::string& switch_netns);

// <state_dir>/pfc/<switch netns>.settings.json: the per-port PFC enable masks and watchdogs the
// agent runs with, which the pfc_config and pfc_watchdog faults change while it runs
// (injectors/sys/pfc_switch_control.h).
std::string pfcSettingsFile(const std::string& state_dir, const std::string& switch_netns);

// What `lab up` says of a switch whose egress honours PFC: the lossless class, its priority, and
// where the counters are.
std::string describePfc(const scenarios::EgressModel& egress, const std::string& stats_file);

// Pure: `ip netns exec <netns> <binary> pfc-switch --ports ... --daemon ...` for `sw`, whose
// egress must be modelled with pfc.
std::vector<std::string> pfcAgentCommand(const std::string& binary, const scenarios::Switch& sw,
                                         const std::string& state_dir);

// Starts the agent of `sw` and returns once its gate is attached to every port (the command
// exits then, leaving the agent running); its error output otherwise. kFailedPrecondition when
// the switch's egress has no pfc.
core::Status startPfcAgent(sys::CommandRunner& runner, const std::string& binary,
                           const scenarios::Switch& sw, const std::string& state_dir);

// Whether a PFC agent runs inside `netns`.
core::Result<bool> pfcAgentRunning(sys::CommandRunner& runner, const std::string& netns);

// Stops every process inside `netns` (`ip netns pids`): SIGTERM, then SIGKILL after 2 s. A
// process left inside a namespace keeps it alive, unseen, after `ip netns del`.
core::Status stopProcessesInNetns(sys::CommandRunner& runner, const std::string& netns,
                                  const std::function<void(const std::string&)>& progress);

}  // namespace fabric_chaos::lab
