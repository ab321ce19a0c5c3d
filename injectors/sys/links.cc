#include "injectors/sys/links.h"

#include <linux/if.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>

#include "injectors/sys/netlink_status.h"
#include "injectors/sys/netns.h"

namespace fabric_chaos::sys {
namespace {

struct LinkDeleter {
  void operator()(rtnl_link* link) const { rtnl_link_put(link); }
};
using LinkPtr = std::unique_ptr<rtnl_link, LinkDeleter>;

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
      rtnl_link* l = link->get();
      unsigned int flags = rtnl_link_get_flags(l);
      info.ifname = ifname;
      info.ifindex = rtnl_link_get_ifindex(l);
      info.admin_up = (flags & IFF_UP) != 0;
      info.carrier = (flags & IFF_LOWER_UP) != 0;
      char buf[32];
      info.operstate = rtnl_link_operstate2str(rtnl_link_get_operstate(l), buf, sizeof(buf));
      return core::Status::ok();
    });
    if (!status.isOk()) return status;
    return info;
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
