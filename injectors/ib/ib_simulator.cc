#include "injectors/ib/ib_simulator.h"

namespace fabric_chaos::injectors {

using core::Status;
using core::StatusCode;

core::Result<pid_t> findSimulator(sys::DaemonControl& daemons, const std::string& netns) {
  const std::optional<uint64_t> inode = daemons.netnsInode(netns);
  if (!inode) {
    return Status(StatusCode::kFailedPrecondition,
                  "no network namespace " + netns + ": is the IB lab up?");
  }
  std::vector<pid_t> found;
  for (const sys::ProcessInfo& process : daemons.find("ibsim")) {
    if (process.netns_inode == inode) found.push_back(process.pid);
  }
  if (found.empty()) {
    return Status(StatusCode::kFailedPrecondition,
                  "no ibsim runs in namespace " + netns + ": is the IB lab up?");
  }
  if (found.size() > 1) {
    return Status(StatusCode::kFailedPrecondition,
                  std::to_string(found.size()) + " ibsim processes run in namespace " + netns);
  }
  return found.front();
}

Status sendSimulatorCommand(sys::DaemonControl& daemons, const std::string& netns,
                            const std::string& command) {
  auto pid = findSimulator(daemons, netns);
  if (!pid.isOk()) return pid.status();
  return daemons.writeLine("/proc/" + std::to_string(*pid) + "/fd/0", command);
}

std::string unlinkCommand(const std::string& node, int port) {
  return "Unlink \"" + node + "\"[" + std::to_string(port) + "]";
}

std::string relinkCommand(const std::string& node, int port) {
  return "ReLink \"" + node + "\"[" + std::to_string(port) + "]";
}

std::string errorRateCommand(const std::string& node, int port, int percent) {
  return "Error \"" + node + "\"[" + std::to_string(port) + "] " + std::to_string(percent);
}

}  // namespace fabric_chaos::injectors
