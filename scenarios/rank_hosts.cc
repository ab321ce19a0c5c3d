#include "scenarios/rank_hosts.h"

namespace fabric_chaos::scenarios {

core::Result<std::string> hostOfRank(int rank, const Fabric& fabric,
                                     const std::vector<std::string>& workload_hosts) {
  std::vector<std::string> hosts = workload_hosts;
  if (hosts.empty()) {
    for (const Host& host : fabric.hosts) hosts.push_back(host.name);
  }
  if (rank < 0 || static_cast<size_t>(rank) >= hosts.size()) {
    return core::Status(
        core::StatusCode::kUnprocessable,
        "rank " + std::to_string(rank) + ": the workload has " + std::to_string(hosts.size()) +
            (hosts.size() == 1 ? " rank" : " ranks") +
            (hosts.empty() ? "" : " (0 to " + std::to_string(hosts.size() - 1) + ")"));
  }
  return hosts[static_cast<size_t>(rank)];
}

}  // namespace fabric_chaos::scenarios
