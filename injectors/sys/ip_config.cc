#include "injectors/sys/ip_config.h"

#include <arpa/inet.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <netlink/addr.h>
#include <netlink/cache.h>
#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/nexthop.h>
#include <netlink/route/route.h>

#include <array>
#include <cstring>

#include "injectors/sys/netlink_status.h"
#include "injectors/sys/route_socket_pool.h"

namespace fabric_chaos::sys {
namespace {

// The flags one sets on an address (`ip addr add ... nodad noprefixroute`); the others report
// its state and are the kernel's to set.
constexpr uint32_t kConfigFlags = IFA_F_NODAD | IFA_F_OPTIMISTIC | IFA_F_HOMEADDRESS |
                                  IFA_F_MANAGETEMPADDR | IFA_F_NOPREFIXROUTE | IFA_F_MCAUTOJOIN;

struct CacheDeleter {
  void operator()(nl_cache* cache) const { nl_cache_free(cache); }
};
using CachePtr = std::unique_ptr<nl_cache, CacheDeleter>;
struct AddrDeleter {
  void operator()(nl_addr* addr) const { nl_addr_put(addr); }
};
using NlAddrPtr = std::unique_ptr<nl_addr, AddrDeleter>;
struct RtnlAddrDeleter {
  void operator()(rtnl_addr* addr) const { rtnl_addr_put(addr); }
};
using RtnlAddrPtr = std::unique_ptr<rtnl_addr, RtnlAddrDeleter>;
struct RouteDeleter {
  void operator()(rtnl_route* route) const { rtnl_route_put(route); }
};
using RoutePtr = std::unique_ptr<rtnl_route, RouteDeleter>;

// The address without its prefix ("10.0.2.15"); "" for none or one of another size.
std::string textOf(nl_addr* addr) {
  if (addr == nullptr) return "";
  const int family = nl_addr_get_family(addr);
  const size_t size = family == AF_INET ? 4 : family == AF_INET6 ? 16 : 0;
  if (size == 0 || nl_addr_get_len(addr) != size) return "";
  char buffer[INET6_ADDRSTRLEN];
  if (inet_ntop(family, nl_addr_get_binary_addr(addr), buffer, sizeof(buffer)) == nullptr) {
    return "";
  }
  return buffer;
}

// "10.0.2.15" with prefix_len; the unspecified address of `family` for "" (a default route).
core::Result<NlAddrPtr> addrOf(int family, const std::string& text, int prefix_len) {
  std::array<uint8_t, 16> raw{};
  const size_t size = family == AF_INET ? 4 : 16;
  if (!text.empty() && inet_pton(family, text.c_str(), raw.data()) != 1) {
    return core::Status(core::StatusCode::kInvalidArgument, "invalid address '" + text + "'");
  }
  NlAddrPtr addr(nl_addr_build(family, raw.data(), size));
  if (!addr) return core::Status(core::StatusCode::kInternal, "out of memory", NLE_NOMEM);
  nl_addr_set_prefixlen(addr.get(), prefix_len);
  return addr;
}

std::string where(const std::string& netns, const std::string& ifname) {
  return ifname + (netns.empty() ? "" : " in netns " + netns);
}

IpAddress describeAddress(rtnl_addr* a) {
  IpAddress out;
  out.family = rtnl_addr_get_family(a);
  out.local = textOf(rtnl_addr_get_local(a));
  out.prefix_len = rtnl_addr_get_prefixlen(a);
  const std::string peer = textOf(rtnl_addr_get_peer(a));
  if (peer != out.local) out.peer = peer;
  out.broadcast = textOf(rtnl_addr_get_broadcast(a));
  out.scope = rtnl_addr_get_scope(a);
  out.flags = rtnl_addr_get_flags(a);
  const char* label = rtnl_addr_get_label(a);
  out.label = label == nullptr ? "" : label;
  out.valid_lifetime = rtnl_addr_get_valid_lifetime(a);
  out.preferred_lifetime = rtnl_addr_get_preferred_lifetime(a);
  return out;
}

// The rtnl_addr that names `address` on ifindex; with its configuration when `full`.
core::Result<RtnlAddrPtr> buildAddress(int ifindex, const IpAddress& address, bool full) {
  RtnlAddrPtr a(rtnl_addr_alloc());
  if (!a) return core::Status(core::StatusCode::kInternal, "out of memory", NLE_NOMEM);
  rtnl_addr_set_ifindex(a.get(), ifindex);
  rtnl_addr_set_family(a.get(), address.family);
  auto local = addrOf(address.family, address.local, address.prefix_len);
  if (!local) return local.status();
  if (int err = rtnl_addr_set_local(a.get(), local->get()); err < 0) {
    return nlStatus(err, "invalid address " + address.local);
  }
  rtnl_addr_set_prefixlen(a.get(), address.prefix_len);
  if (!address.peer.empty()) {
    auto peer = addrOf(address.family, address.peer, address.prefix_len);
    if (!peer) return peer.status();
    if (int err = rtnl_addr_set_peer(a.get(), peer->get()); err < 0) {
      return nlStatus(err, "invalid peer " + address.peer);
    }
  }
  if (!full) return a;
  if (!address.broadcast.empty()) {
    auto broadcast = addrOf(address.family, address.broadcast, 32);
    if (!broadcast) return broadcast.status();
    if (int err = rtnl_addr_set_broadcast(a.get(), broadcast->get()); err < 0) {
      return nlStatus(err, "invalid broadcast " + address.broadcast);
    }
  }
  if (!address.label.empty()) {
    if (int err = rtnl_addr_set_label(a.get(), address.label.c_str()); err < 0) {
      return nlStatus(err, "invalid label " + address.label);
    }
  }
  rtnl_addr_set_scope(a.get(), address.scope);
  rtnl_addr_set_flags(a.get(), address.flags & kConfigFlags);
  if (address.valid_lifetime != IpAddress::kForever ||
      address.preferred_lifetime != IpAddress::kForever) {
    rtnl_addr_set_valid_lifetime(a.get(), address.valid_lifetime);
    rtnl_addr_set_preferred_lifetime(a.get(), address.preferred_lifetime);
  }
  return a;
}

std::string describe(const IpAddress& address) {
  return address.local + "/" + std::to_string(address.prefix_len);
}

std::string describe(const IpRoute& route) {
  std::string text = route.destination.empty()
                         ? std::string("default")
                         : route.destination + "/" + std::to_string(route.destination_len);
  if (!route.gateway.empty()) text += " via " + route.gateway;
  return text + " table " + std::to_string(route.table);
}

class NetlinkIpConfig : public IpConfig {
 public:
  core::Result<std::vector<IpAddress>> addresses(const std::string& netns,
                                                 const std::string& ifname) override {
    if (!isValidIfname(ifname)) return invalidIfname(ifname);
    std::vector<IpAddress> out;
    core::Status status = RouteSocketPool::shared().with(netns, [&](nl_sock* sock) {
      auto ifindex = ifindexOf(sock, netns, ifname);
      if (!ifindex) return ifindex.status();
      nl_cache* raw = nullptr;
      if (int err = rtnl_addr_alloc_cache(sock, &raw); err < 0) {
        return nlStatus(err, "cannot list the addresses of " + where(netns, ifname));
      }
      CachePtr cache(raw);
      for (nl_object* obj = nl_cache_get_first(cache.get()); obj != nullptr;
           obj = nl_cache_get_next(obj)) {
        auto* a = reinterpret_cast<rtnl_addr*>(obj);
        if (rtnl_addr_get_ifindex(a) != *ifindex) continue;
        IpAddress address = describeAddress(a);
        if (!address.local.empty()) out.push_back(std::move(address));
      }
      return core::Status::ok();
    });
    if (!status) return status;
    return out;
  }

  core::Status addAddress(const std::string& netns, const std::string& ifname,
                          const IpAddress& address) override {
    if (!isValidIfname(ifname)) return invalidIfname(ifname);
    const std::string what = "cannot add " + describe(address) + " to " + where(netns, ifname);
    return RouteSocketPool::shared().with(netns, [&](nl_sock* sock) -> core::Status {
      auto ifindex = ifindexOf(sock, netns, ifname);
      if (!ifindex) return ifindex.status();
      auto a = buildAddress(*ifindex, address, true);
      if (!a) return a.status().withContext(what);
      if (int err = rtnl_addr_add(sock, a->get(), NLM_F_EXCL); err < 0) {
        return nlStatus(err, what);
      }
      return core::Status::ok();
    });
  }

  core::Status removeAddress(const std::string& netns, const std::string& ifname,
                             const IpAddress& address) override {
    if (!isValidIfname(ifname)) return invalidIfname(ifname);
    const std::string what = "cannot remove " + describe(address) + " from " + where(netns, ifname);
    return RouteSocketPool::shared().with(netns, [&](nl_sock* sock) -> core::Status {
      auto ifindex = ifindexOf(sock, netns, ifname);
      if (!ifindex) return ifindex.status();
      auto a = buildAddress(*ifindex, address, false);
      if (!a) return a.status().withContext(what);
      if (int err = rtnl_addr_delete(sock, a->get(), 0); err < 0) {
        // EADDRNOTAVAIL: the netdev has no such address.
        if (-err == NLE_NOADDR) {
          return core::Status(core::StatusCode::kNotFound,
                              where(netns, ifname) + " has no address " + describe(address),
                              NLE_NOADDR);
        }
        return nlStatus(err, what);
      }
      return core::Status::ok();
    });
  }

  core::Result<std::vector<IpRoute>> routes(const std::string& netns,
                                            const std::string& ifname) override {
    if (!isValidIfname(ifname)) return invalidIfname(ifname);
    std::vector<IpRoute> out;
    core::Status status = RouteSocketPool::shared().with(netns, [&](nl_sock* sock) {
      auto ifindex = ifindexOf(sock, netns, ifname);
      if (!ifindex) return ifindex.status();
      nl_cache* raw = nullptr;
      if (int err = rtnl_route_alloc_cache(sock, AF_UNSPEC, 0, &raw); err < 0) {
        return nlStatus(
            err, "cannot list the routes" + std::string(netns.empty() ? "" : " of netns " + netns));
      }
      CachePtr cache(raw);
      for (nl_object* obj = nl_cache_get_first(cache.get()); obj != nullptr;
           obj = nl_cache_get_next(obj)) {
        auto* r = reinterpret_cast<rtnl_route*>(obj);
        if (rtnl_route_get_type(r) != RTN_UNICAST || rtnl_route_get_nnexthops(r) != 1) continue;
        rtnl_nexthop* nh = rtnl_route_nexthop_n(r, 0);
        if (nh == nullptr || rtnl_route_nh_get_ifindex(nh) != *ifindex) continue;
        IpRoute route;
        route.family = rtnl_route_get_family(r);
        route.table = rtnl_route_get_table(r);
        nl_addr* dst = rtnl_route_get_dst(r);
        route.destination_len = dst == nullptr ? 0 : static_cast<int>(nl_addr_get_prefixlen(dst));
        if (route.destination_len > 0) route.destination = textOf(dst);
        route.gateway = textOf(rtnl_route_nh_get_gateway(nh));
        route.preferred_source = textOf(rtnl_route_get_pref_src(r));
        route.priority = rtnl_route_get_priority(r);
        route.protocol = rtnl_route_get_protocol(r);
        route.scope = rtnl_route_get_scope(r);
        route.type = rtnl_route_get_type(r);
        route.tos = rtnl_route_get_tos(r);
        for (int metric = 1; metric <= RTAX_MAX; ++metric) {
          uint32_t value = 0;
          if (rtnl_route_get_metric(r, metric, &value) == 0) {
            route.metrics.emplace_back(metric, value);
          }
        }
        out.push_back(std::move(route));
      }
      return core::Status::ok();
    });
    if (!status) return status;
    return out;
  }

  core::Status addRoute(const std::string& netns, const std::string& ifname,
                        const IpRoute& route) override {
    if (!isValidIfname(ifname)) return invalidIfname(ifname);
    const std::string what =
        "cannot add route " + describe(route) + " through " + where(netns, ifname);
    return RouteSocketPool::shared().with(netns, [&](nl_sock* sock) -> core::Status {
      auto ifindex = ifindexOf(sock, netns, ifname);
      if (!ifindex) return ifindex.status();
      RoutePtr r(rtnl_route_alloc());
      if (!r) return core::Status(core::StatusCode::kInternal, what + ": out of memory");
      rtnl_route_set_family(r.get(), static_cast<uint8_t>(route.family));
      rtnl_route_set_table(r.get(), route.table);
      rtnl_route_set_protocol(r.get(), static_cast<uint8_t>(route.protocol));
      rtnl_route_set_scope(r.get(), static_cast<uint8_t>(route.scope));
      rtnl_route_set_type(r.get(), static_cast<uint8_t>(route.type));
      rtnl_route_set_priority(r.get(), route.priority);
      rtnl_route_set_tos(r.get(), static_cast<uint8_t>(route.tos));
      auto dst = addrOf(route.family, route.destination, route.destination_len);
      if (!dst) return dst.status().withContext(what);
      if (int err = rtnl_route_set_dst(r.get(), dst->get()); err < 0) return nlStatus(err, what);
      if (!route.preferred_source.empty()) {
        const int full = route.family == AF_INET ? 32 : 128;
        auto source = addrOf(route.family, route.preferred_source, full);
        if (!source) return source.status().withContext(what);
        if (int err = rtnl_route_set_pref_src(r.get(), source->get()); err < 0) {
          return nlStatus(err, what);
        }
      }
      for (const auto& [metric, value] : route.metrics) {
        if (int err = rtnl_route_set_metric(r.get(), metric, value); err < 0) {
          return nlStatus(err, what);
        }
      }
      rtnl_nexthop* nh = rtnl_route_nh_alloc();
      if (nh == nullptr) return core::Status(core::StatusCode::kInternal, what + ": out of memory");
      rtnl_route_nh_set_ifindex(nh, *ifindex);
      if (!route.gateway.empty()) {
        const int full = route.family == AF_INET ? 32 : 128;
        auto gateway = addrOf(route.family, route.gateway, full);
        if (!gateway) {
          rtnl_route_nh_free(nh);
          return gateway.status().withContext(what);
        }
        rtnl_route_nh_set_gateway(nh, gateway->get());
      }
      rtnl_route_add_nexthop(r.get(), nh);  // the route owns it from here
      if (int err = rtnl_route_add(sock, r.get(), NLM_F_EXCL); err < 0) {
        return nlStatus(err, what);
      }
      return core::Status::ok();
    });
  }

 private:
  static core::Status invalidIfname(const std::string& ifname) {
    return core::Status(core::StatusCode::kInvalidArgument,
                        "invalid interface name '" + ifname + "'");
  }
};

}  // namespace

std::unique_ptr<IpConfig> makeNetlinkIpConfig() { return std::make_unique<NetlinkIpConfig>(); }

bool isStaticAddress(const IpAddress& address) { return (address.flags & IFA_F_PERMANENT) != 0; }

bool isIpv6LinkLocal(const IpAddress& address) {
  in6_addr raw{};
  if (address.family != AF_INET6 || inet_pton(AF_INET6, address.local.c_str(), &raw) != 1) {
    return false;
  }
  return IN6_IS_ADDR_LINKLOCAL(&raw);
}

bool isKernelRoute(const IpRoute& route) {
  return route.protocol == RTPROT_KERNEL || route.protocol == RTPROT_RA ||
         route.table == RT_TABLE_LOCAL;
}

}  // namespace fabric_chaos::sys
