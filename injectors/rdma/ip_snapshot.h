#pragma once
// A netdev's IP configuration recorded before an RDMA device fault changes it, in the form the
// journal keeps, and putting back what the kernel dropped: taking the last IPv4 address off a
// netdev flushes the routes through it and a primary address takes its secondaries along; an
// administrative link-down removes the IPv6 addresses and the routes. Called from the engine's
// run thread, through sys::IpConfig; no state between calls.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "injectors/sys/ip_config.h"

namespace fabric_chaos::injectors {

struct IpSnapshot {
  std::vector<sys::IpAddress> addresses;  // the kernel's order
  std::vector<sys::IpRoute> routes;       // single-next-hop unicast routes through the netdev
  bool operator==(const IpSnapshot&) const = default;
};

// The addresses and routes of `ifname` in the caller's namespace.
core::Result<IpSnapshot> takeIpSnapshot(sys::IpConfig& ip, const std::string& ifname);

// Re-adds, in recorded order, what the kernel does not bring back by itself: `required` (the
// address a fault removed on purpose; nullptr for none), every other static address (IFA_F_
// PERMANENT, but IPv6 link-local, which the kernel makes when the netdev comes up), then the
// routes the kernel did not make (not proto kernel or ra, not the local table). What is still
// there is left as it is, so restoring twice changes nothing. Addresses with a lifetime (DHCP,
// SLAAC) are their owners' to renew. A route that cannot be added (its gateway not reachable
// yet) is tried again after the others; the first failure that remains is returned.
core::Status restoreIpSnapshot(sys::IpConfig& ip, const std::string& ifname,
                               const IpSnapshot& snapshot, const sys::IpAddress* required);

nlohmann::json toJson(const sys::IpAddress& address);
nlohmann::json toJson(const IpSnapshot& snapshot);
// kInvalidArgument naming the field under `path` ("prior.ip.routes[0].table: ...").
core::Result<sys::IpAddress> ipAddressFromJson(const nlohmann::json& doc, const std::string& path);
core::Result<IpSnapshot> ipSnapshotFromJson(const nlohmann::json& doc, const std::string& path);

}  // namespace fabric_chaos::injectors
