#pragma once
// The IB link kinds' way to a real subnet's switch ports: this program's own `ib-port` command
// (app/ib_port_cmd.cc, workload/ib_port_state.h), which discovers the subnet from this host's IB
// port and reads or sets a switch port's physical state by direct route, the PortInfo Set that
// `ibportstate <lid> <port> disable|enable` sends. A child process rather than a call: the same
// command runs attached at a simulated node in the IB lab (umad2sim preloaded), so the lab's tests
// exercise the code that real subnets get. Thread-safe.

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"
#include "injectors/sys/command.h"

namespace fabric_chaos::sys {

enum class IbPortCommandAction { kQuery, kDisable, kEnable };

class IbPortCommand {
 public:
  virtual ~IbPortCommand() = default;
  // The command's reply, {"switch", "guid", "port", "route", "before", "after"}; its refusal
  // (no such node, this host's own cable, no IB port here) as kFailedPrecondition with its
  // reason, a switch that does not answer as kTimeout.
  virtual core::Result<nlohmann::json> run(const std::string& node, int port,
                                           IbPortCommandAction action) = 0;
};

// `self_exe ib-port ...` through `runner`, which must outlive it.
std::unique_ptr<IbPortCommand> makeIbPortCommand(CommandRunner* runner, std::string self_exe);

// The argv it runs: {self_exe, "ib-port", "--node", node, "--port", "3", "--disable"}.
std::vector<std::string> ibPortArgv(const std::string& self_exe, const std::string& node, int port,
                                    IbPortCommandAction action);

}  // namespace fabric_chaos::sys
