#pragma once
// What the RDMA device kinds' steps act on (rdma_port_down, rdma_gid_change, rdma_device_remove,
// rdma_mtu_change; injectors/model/rdma_device_specs.h): one port of an RDMA device on a fabric
// host, acted on by that host's own agent. The selector names the machine by workload `rank`
// (scenarios/rank_hosts.h) or `host`, and the port by `rdma_device` (required: "rxe0"),
// `rdma_port` (default 1) and `gid_index` (default 0; rdma_gid_change reads it).
// And the refusals: an RDMA kind aimed at links, labels, an SM, processes or traffic endpoints,
// and an rdma_device on a kind that does not act on RDMA ports. Pure.

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "scenarios/model.h"
#include "scenarios/topology.h"

namespace fabric_chaos::scenarios {

// nullopt when neither the kind acts on RDMA ports nor the selector names an RDMA device: the
// other resolutions apply. kUnprocessable for a rank the workload does not have or an unknown
// host; kInvalidArgument for a selector the kind cannot take.
std::optional<core::Result<std::vector<ResolvedTarget>>> resolveRdmaStepTargets(
    const FaultStep& step, const Fabric& fabric, const std::vector<std::string>& workload_hosts);

}  // namespace fabric_chaos::scenarios
