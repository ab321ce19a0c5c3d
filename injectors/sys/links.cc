#include "injectors/sys/links.h"

#include <linux/if.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>

#include <algorithm>

#include "injectors/sys/netlink_status.h"
#include "injectors/sys/netns.h"

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
    core::Status status = runInNetns(netns, [&]() -> core::Status {
      auto sock = connectRoute();
      if (!sock.isOk()) return sock.status();
      auto link = fetchLink(sock->get(), netns, ifname);
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
    core::Status status = runInNetns(netns, [&]() -> core::Status {
      auto sock = connectRoute();
      if (!sock.isOk()) return sock.status();
      nl_cache* raw = nullptr;
      if (int err = rtnl_link_alloc_cache(sock->get(), AF_UNSPEC, &raw); err < 0) {
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

  core::Status setAdminUp(const std::string& netns, const std::string& ifname, bool up) override {
    if (!isValidIfname(ifname)) return invalidIfname(ifname);
    return runInNetns(netns, [&]() -> core::Status {
      auto sock = connectRoute();
      if (!sock.isOk()) return sock.status();
      auto orig = fetchLink(sock->get(), netns, ifname);
      if (!orig.isOk()) return orig.status();
      LinkPtr change(rtnl_link_alloc());
      if (!change) {
        return core::Status(core::StatusCode::kInternal, "cannot allocate a link change");
      }
      if (up) {
        rtnl_link_set_flags(change.get(), IFF_UP);
      } else {
        rtnl_link_unset_flags(change.get(), IFF_UP);
      }
      int err = rtnl_link_change(sock->get(), orig->get(), change.get(), 0);
      if (err < 0) {
        if (nlStatusCode(err) == core::StatusCode::kNotFound) {
          return nlStatusWithMessage(err, noSuchDevice(netns, ifname));
        }
        return nlStatus(err, std::string("cannot set ") + ifname + (up ? " up" : " down"));
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
