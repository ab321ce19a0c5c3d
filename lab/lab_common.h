#pragma once
// What the namespace lab and the VM lab do alike: run iproute2 with its stderr mapped to a Status,
// find the namespaces a lab owns by prefix, build the switch namespace with its bridge, and keep
// the fabric file at <state_dir>/fabrics/<name>.json (written atomically: tmp + rename).
// Stateless free functions; thread-safe as far as the CommandRunner passed in is.

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "injectors/sys/command.h"
#include "scenarios/topology.h"

namespace fabric_chaos::lab {

// A substring of `ip`'s stderr and the code it means; the first rule that matches wins, and a
// failure no rule matches is kInternal.
struct IpErrorRule {
  const char* needle;
  core::StatusCode code;
};
using IpErrorRules = std::span<const IpErrorRule>;

// Runs `ip <args>`. A non-zero exit is "`ip ...` failed: <stderr>" with the exit code.
core::Status runIp(sys::CommandRunner& runner, const std::vector<std::string>& args,
                   IpErrorRules rules);

// Runs `tc <args>`, with its failures reported as runIp's.
core::Status runTc(sys::CommandRunner& runner, const std::vector<std::string>& args,
                   IpErrorRules rules);

// The names from `ip netns list` that start with `prefix`.
core::Result<std::vector<std::string>> namespacesWithPrefix(sys::CommandRunner& runner,
                                                            const std::string& prefix);

// `ip netns add <sw>`, with a permission failure said as one clear sentence. Creates nothing else,
// so the caller need not clean up when it fails.
core::Status addSwitchNamespace(sys::CommandRunner& runner, const std::string& sw,
                                IpErrorRules rules);

// The `ip` commands (arguments after "ip") of addSwitchBridge, for labs that plan their commands.
std::vector<std::vector<std::string>> switchBridgeCommands(const std::string& sw);

// Inside the switch namespace: lo up and bridge br0 up. STP off and forward_delay 0: a port that
// comes back up forwards at once, so recovery time measures the fabric and the workload, not the
// bridge's listening/learning states.
core::Status addSwitchBridge(sys::CommandRunner& runner, const std::string& sw, IpErrorRules rules);

// The port model (lab/port_model.h) on every port of every switch of `fabric`, and the ECN marker
// (injectors/sys/ecn_marker.h) with it when the model marks: what both labs' switch ports get.
// The number of ports modelled.
core::Result<int> modelEverySwitchPort(sys::CommandRunner& runner, const scenarios::Fabric& fabric,
                                       const scenarios::EgressModel& egress, IpErrorRules rules);

// Whether `tool` is an executable file in a PATH directory (the system's when PATH is unset): a
// lab's prerequisites, checked before anything is started.
bool isOnPath(const std::string& tool);
// The whole file, "" when it cannot be read (a log that is not there yet).
std::string readTextFile(const std::string& path);
// Without trailing newlines, spaces and carriage returns.
std::string trimRight(std::string text);

// Seconds from `start` to now on the steady clock, and "12.3 s": the labs' progress lines.
double secondsSince(std::chrono::steady_clock::time_point start);
std::string secondsText(double seconds);

std::string fabricFilePath(const std::string& state_dir, const std::string& name);

// The fabric file at `path` as JSON; nullopt when it is missing or not JSON.
std::optional<nlohmann::json> readFabricFile(const std::string& path);

// Every namespace (switches', then hosts') the fabric file at `path` names; nullopt when it is
// missing or not a fabric.
std::optional<std::vector<std::string>> namespacesInFabricFile(const std::string& path);

// The number of hosts the fabric file at `path` describes, or `fallback` when it cannot say.
int hostsInFabricFile(const std::string& path, int fallback);

// Writes the fabric to fabricFilePath(state_dir, name) through a temporary file and a rename.
core::Status writeFabricFile(const std::string& state_dir, const std::string& name,
                             const scenarios::Fabric& fabric);

}  // namespace fabric_chaos::lab
