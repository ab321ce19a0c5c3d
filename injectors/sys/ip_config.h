#pragma once
// A netdev's IP configuration, its addresses and the routes through it, read and put back through
// rtnetlink (libnl-route-3). The kernel drops more than a fault changes: taking the last IPv4
// address off a netdev flushes every route through it, a primary address takes its secondaries
// along, and an administrative link-down removes IPv6 addresses and routes. The RDMA device faults
// (injectors/rdma/) record this configuration before acting and re-add what went missing on
// revert. Errors as LinkControl's (injectors/sys/links.h): NLE_* origin, a missing device or
// namespace kNotFound, a missing capability kPermissionDenied. Thread-safe: sockets come from
// RouteSocketPool.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::sys {

// What `ip -d addr` shows about one address, all that re-adding it faithfully needs.
struct IpAddress {
  int family = 0;                      // AF_INET, AF_INET6
  std::string local;                   // "10.0.2.15", "fd00::15"
  int prefix_len = 0;                  // 24
  std::string peer = {};               // point-to-point peer (IFA_ADDRESS); "" when none
  std::string broadcast = {};          // IPv4 only; "" when none
  int scope = 0;                       // RT_SCOPE_UNIVERSE (0), RT_SCOPE_LINK (253), ...
  uint32_t flags = 0;                  // IFA_F_*, as the kernel reports them (state bits included)
  std::string label = {};              // IPv4 only: "eth0", "eth0:1"
  uint32_t valid_lifetime = kForever;  // seconds left, as reported when read
  uint32_t preferred_lifetime = kForever;

  static constexpr uint32_t kForever = 0xffffffff;  // INFINITY_LIFE_TIME
  bool operator==(const IpAddress&) const = default;
};

// One route whose single next hop leaves through the netdev, as `ip route show table all`.
struct IpRoute {
  int family = 0;
  uint32_t table = 254;          // RT_TABLE_MAIN
  std::string destination = {};  // network address; "" for the default route
  int destination_len = 0;
  std::string gateway = {};  // "" for a directly connected destination
  std::string preferred_source = {};
  uint32_t priority = 0;  // the metric
  int protocol = 0;       // RTPROT_*: 4 static, 3 boot, 16 dhcp, ...
  int scope = 0;
  int type = 1;  // RTN_UNICAST
  int tos = 0;
  std::vector<std::pair<int, uint32_t>> metrics = {};  // RTAX_* (mtu, advmss, ...) set on it
  bool operator==(const IpRoute&) const = default;
};

class IpConfig {
 public:
  virtual ~IpConfig() = default;
  // The netdev's addresses, in the kernel's order (an IPv4 primary before its secondaries).
  virtual core::Result<std::vector<IpAddress>> addresses(const std::string& netns,
                                                         const std::string& ifname) = 0;
  // Adds `address` with its configuration: prefix, peer, broadcast, scope, label, lifetimes and
  // the flags one sets (nodad, noprefixroute, mngtmpaddr, home, autojoin, optimistic); the state
  // flags (secondary, tentative, deprecated, permanent, ...) are the kernel's. kAlreadyExists when
  // the netdev has it.
  virtual core::Status addAddress(const std::string& netns, const std::string& ifname,
                                  const IpAddress& address) = 0;
  // kNotFound when the netdev does not have it.
  virtual core::Status removeAddress(const std::string& netns, const std::string& ifname,
                                     const IpAddress& address) = 0;
  // Every table's unicast routes with one next hop, through ifname. Multipath routes are left out:
  // the kernel revives a next hop through a netdev that comes back itself.
  virtual core::Result<std::vector<IpRoute>> routes(const std::string& netns,
                                                    const std::string& ifname) = 0;
  // Adds `route` through ifname; kAlreadyExists when the table has it.
  virtual core::Status addRoute(const std::string& netns, const std::string& ifname,
                                const IpRoute& route) = 0;
};

std::unique_ptr<IpConfig> makeNetlinkIpConfig();

// Static: configured without a lifetime (IFA_F_PERMANENT), so no DHCP client or router
// advertisement renews it.
bool isStaticAddress(const IpAddress& address);
// fe80::/10: addrconf makes the netdev's own when it comes up.
bool isIpv6LinkLocal(const IpAddress& address);
// Made by the kernel: with an address (proto kernel), from a router advertisement (proto ra), or
// in the local table, which only the kernel fills.
bool isKernelRoute(const IpRoute& route);

}  // namespace fabric_chaos::sys
