#pragma once
// The rule the agent applies before touching anything: which fault targets it may act on (its
// allowlist) and which it never does (the management interfaces that carry the controller).

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "injectors/model/target.h"

namespace fabric_chaos::agent {

inline constexpr std::string_view kRestartWithAllow = "restart the agent with --allow to change it";

// The netdev an RDMA port sends through (RoCE, iWARP): "eth0" for rxe0 port 1. kNotFound for an
// unknown device or port; "" for a port without one (native InfiniBand).
using RdmaNetdevLookup =
    std::function<core::Result<std::string>(const injectors::RdmaPortTarget& port)>;

// Whether a fault may touch target: the management interfaces (in the agent's own namespace) never,
// otherwise anything when `allowed` is empty (nothing when !empty_allows_any: the agent embedded in
// serve, whose list comes from the registered fabrics), else only a listed "ifname" (agent's own
// namespace) or "netns/ifname". kPermissionDenied says which rule refused and ends with `remedy`.
// The list names interfaces: a traffic set is allowed when each of its endpoints is, and an RDMA
// port when its netdev (found through `rdma_netdev`, in the agent's own namespace, where RDMA
// devices live) is: a device fault changes that netdev's state, addresses or MTU, or takes away
// the device on it. IB ports and subnet managers are listed by their lock key
// (injectors/model/target.h lockKeys). Processes are always allowed: the verbs kinds act only on
// programs that loaded the verbs fault library into this agent's own socket directory. An RDMA
// port without `rdma_netdev`, or whose port has no netdev, is refused naming the reason.
core::Status checkTargetAllowed(const injectors::Target& target,
                                const std::vector<std::string>& allowed,
                                const std::vector<std::string>& management,
                                bool empty_allows_any = true,
                                std::string_view remedy = kRestartWithAllow,
                                const RdmaNetdevLookup& rdma_netdev = {});

}  // namespace fabric_chaos::agent
