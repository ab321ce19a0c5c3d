#pragma once
// Runs an external command to completion and captures its output. The lab uses it to drive
// iproute2 (`ip netns add`, `ip link add ... type veth`), whose namespace handling
// (/run/netns bind mounts) is the convention every operator's tooling already understands.
// Thread-safe.

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::sys {

struct CommandResult {
  int exit_code = 0;  // 128+signal when killed
  std::string out;
  std::string err;
};

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // argv[0] is looked up in PATH. A command that cannot be started is an error; one that runs
  // and exits non-zero is a CommandResult with its exit code (the caller decides).
  virtual core::Result<CommandResult> run(const std::vector<std::string>& argv,
                                          int timeout_ms = 30000) = 0;
};

std::unique_ptr<CommandRunner> makeCommandRunner();

// "ip -n fc-h0 link set eth0 up" for messages.
std::string joinArgv(const std::vector<std::string>& argv);

}  // namespace fabric_chaos::sys
