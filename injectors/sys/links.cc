#include "injectors/sys/links.h"

#include <arpa/inet.h>
#include <linux/if.h>
#include <linux/rtnetlink.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>

#include <algorithm>
#include <functional>

#include "injectors/sys/netlink_status.h"
#include "injectors/sys/route_socket_pool.h"

namespace fabric_chaos::sys {
namespace {

struct LinkDeleter {
  void operator()(rtnl_link* link) const { rtnl_link_put(link); }
};
using LinkPtr = std::unique_ptr<rtnl_link, LinkDeleter>;

struct CacheDeleter {
  void operator()(nl_cache* cache) const { nl_cache_free(cache); }
};
using CachePtr = std::unique_ptr<nl_cache, CacheDeleter>;

// The fields of LinkInfo that one rtnl_link carries.
LinkInfo describeLink(rtnl_link* l) {
  LinkInfo info;
  const char* name = rtnl_link_get_name(l);
  info.ifname = name == nullptr ? "" : name;
  unsigned int flags = rtnl_link_get_flags(l);
  info.ifindex = rtnl_link_get_ifindex(l);
  info.admin_up = (flags & IFF_UP) != 0;
  info.carrier = (flags & IFF_LOWER_UP) != 0;
  info.tx_bytes = rtnl_link_get_stat(l, RTNL_LINK_TX_BYTES);
  info.mtu = rtnl_link_get_mtu(l);
  char buf[64];
  info.operstate = rtnl_link_operstate2str(rtnl_link_get_operstate(l), buf, sizeof(buf));
  // A device without a link-layer address (tun, ip6tnl...) has none, not "none".
  if (nl_addr* addr = rtnl_link_get_addr(l); addr != nullptr && nl_addr_get_len(addr) > 0) {
    info.mac = nl_addr2str(addr, buf, sizeof(buf));
  }
  return info;
}

core::Status invalidIfname(const std::string& ifname) {
  return core::Status(core::StatusCode::kInvalidArgument,
                      "invalid interface name '" + ifname + "'");
}

// Reads ifname through the kernel (no cache), mapping "no such device" to a sentence that
// names the namespace.
core::Result<LinkPtr> fetchLink(nl_sock* sock, const std::string& netns,
                                const std::string& ifname) {
  rtnl_link* raw = nullptr;
  int err = rtnl_link_get_kernel(sock, 0, ifname.c_str(), &raw);
  if (err < 0) {
    if (nlStatusCode(err) == core::StatusCode::kNotFound) {
      return nlStatusWithMessage(err, noSuchDevice(netns, ifname));
    }
    return nlStatus(err, "cannot read link " + ifname);
  }
  return LinkPtr(raw);
}

class NetlinkLinkControl : public LinkControl {
 public:
  core::Result<LinkInfo> getLink(const std::string& netns, const std::string& ifname) override {
    if (!isValidIfname(ifname)) return invalidIfname(ifname);
    LinkInfo info;
    core::Status status = RouteSocketPool::shared().with(netns, [&](nl_sock* sock) -> core::Status {
      auto link = fetchLink(sock, netns, ifname);
      if (!link.isOk()) return link.status();
      info = describeLink(link->get());
      info.ifname = ifname;
      return core::Status::ok();
    });
    if (!status.isOk()) return status;
    return info;
  }

  core::Result<std::vector<LinkInfo>> listLinks(const std::string& netns) override {
    std::vector<LinkInfo> links;
    core::Status status = RouteSocketPool::shared().with(netns, [&](nl_sock* sock) -> core::Status {
      nl_cache* raw = nullptr;
      if (int err = rtnl_link_alloc_cache(sock, AF_UNSPEC, &raw); err < 0) {
        return nlStatus(err, "cannot list the links" + (netns.empty() ? "" : " of netns " + netns));
      }
      CachePtr cache(raw);
      for (nl_object* obj = nl_cache_get_first(cache.get()); obj != nullptr;
           obj = nl_cache_get_next(obj)) {
        links.push_back(describeLink(reinterpret_cast<rtnl_link*>(obj)));
      }
      return core::Status::ok();
    });
    if (!status.isOk()) return status;
    std::sort(links.begin(), links.end(),
              [](const LinkInfo& a, const LinkInfo& b) { return a.ifname < b.ifname; });
    return links;
  }

  core::Result<std::vector<std::string>> ipv4Addresses(const std::string& netns,
                                                       const std::string& ifname) override {
    if (!isValidIfname(ifname)) return invalidIfname(ifname);
    std::vector<std::string> addresses;
    core::Status status = RouteSocketPool::shared().with(netns, [&](nl_sock* sock) -> core::Status {
      auto link = fetchLink(sock, netns, ifname);
      if (!link.isOk()) return link.status();
      const int ifindex = rtnl_link_get_ifindex(link->get());
      nl_cache* raw = nullptr;
      if (int err = rtnl_addr_alloc_cache(sock, &raw); err < 0) {
        return nlStatus(err, "cannot list the addresses of " + ifname);
      }
      CachePtr cache(raw);
      for (nl_object* obj = nl_cache_get_first(cache.get()); obj != nullptr;
           obj = nl_cache_get_next(obj)) {
        auto* addr = reinterpret_cast<rtnl_addr*>(obj);
        if (rtnl_addr_get_ifindex(addr) != ifindex || rtnl_addr_get_family(addr) != AF_INET) {
          continue;
        }
        nl_addr* local = rtnl_addr_get_local(addr);
        if (local == nullptr || nl_addr_get_len(local) != 4) continue;
        char buf[INET_ADDRSTRLEN];
        if (inet_ntop(AF_INET, nl_addr_get_binary_addr(local), buf, sizeof(buf)) != nullptr) {
          addresses.emplace_back(buf);
        }
      }
      return core::Status::ok();
    });
    if (!status.isOk()) return status;
    return addresses;
  }

  // A link change is one RTM_NEWLINK that names the device (ifi_index 0): no read of the link
  // first, so a flap phase is one round trip on a pooled socket.
  core::Status setAdminUp(const std::string& netns, const std::string& ifname, bool up) override {
    return changeLink(netns, ifname, IFF_UP, up ? IFF_UP : 0, nullptr,
                      std::string("cannot set ") + ifname + (up ? " up" : " down"));
  }

  core::Status setMtu(const std::string& netns, const std::string& ifname, uint32_t mtu) override {
    return changeLink(
        netns, ifname, 0, 0, [mtu](nl_msg* msg) { return nla_put_u32(msg, IFLA_MTU, mtu); },
        "cannot set the MTU of " + ifname + " to " + std::to_string(mtu));
  }

 private:
  // Sends the change of `flags` under `flag_mask`, with the attributes `attributes` adds (null:
  // none), and waits for the ack. `failure` names what failed, for errors other than a missing
  // device.
  core::Status changeLink(const std::string& netns, const std::string& ifname,
                          unsigned int flag_mask, unsigned int flags,
                          const std::function<int(nl_msg*)>& attributes,
                          const std::string& failure) {
    if (!isValidIfname(ifname)) return invalidIfname(ifname);
    return RouteSocketPool::shared().with(netns, [&](nl_sock* sock) -> core::Status {
      nl_msg* msg = nlmsg_alloc_simple(RTM_NEWLINK, 0);
      if (msg == nullptr) {
        return core::Status(core::StatusCode::kInternal, "cannot allocate a link change");
      }
      ifinfomsg change{};
      change.ifi_family = AF_UNSPEC;
      change.ifi_index = 0;  // by IFLA_IFNAME
      change.ifi_change = flag_mask;
      change.ifi_flags = flags;
      if (nlmsg_append(msg, &change, sizeof(change), NLMSG_ALIGNTO) < 0 ||
          nla_put_string(msg, IFLA_IFNAME, ifname.c_str()) < 0 ||
          (attributes && attributes(msg) < 0)) {
        nlmsg_free(msg);
        return core::Status(core::StatusCode::kInternal, "cannot build a link change");
      }
      const int err = nl_send_sync(sock, msg);  // sends, waits for the ack, frees msg
      if (err < 0) {
        if (nlStatusCode(err) == core::StatusCode::kNotFound) {
          return nlStatusWithMessage(err, noSuchDevice(netns, ifname));
        }
        return nlStatus(err, failure);
      }
      return core::Status::ok();
    });
  }
};

}  // namespace

std::unique_ptr<LinkControl> makeNetlinkLinkControl() {
  return std::make_unique<NetlinkLinkControl>();
}

}  // namespace fabric_chaos::sys
