#include "injectors/sys/netlink_status.h"

#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/socket.h>

#include <cstdlib>

namespace fabric_chaos::sys {

core::StatusCode nlStatusCode(int nle) {
  switch (std::abs(nle)) {
    case NLE_SUCCESS:
      return core::StatusCode::kOk;
    case NLE_OBJ_NOTFOUND:
    case NLE_NODEV:
      return core::StatusCode::kNotFound;
    case NLE_PERM:
    case NLE_NOACCESS:
      return core::StatusCode::kPermissionDenied;
    case NLE_OPNOTSUPP:
    case NLE_AF_NOSUPPORT:
    case NLE_MSGTYPE_NOSUPPORT:
    case NLE_SRCRT_NOSUPPORT:
      return core::StatusCode::kNotSupported;
    case NLE_EXIST:
      return core::StatusCode::kAlreadyExists;
    case NLE_INVAL:
    case NLE_RANGE:
    case NLE_MISSING_ATTR:
      return core::StatusCode::kInvalidArgument;
    case NLE_AGAIN:
    case NLE_BUSY:
    case NLE_INTR:
    case NLE_DUMP_INTR:
      return core::StatusCode::kUnavailable;
    default:
      return core::StatusCode::kInternal;
  }
}

core::Status nlStatusWithMessage(int nle, std::string message) {
  return core::Status(nlStatusCode(nle), std::move(message), std::abs(nle));
}

core::Status nlStatus(int nle, const std::string& what) {
  return nlStatusWithMessage(nle, what + ": " + nl_geterror(std::abs(nle)));
}

void NlSocketDeleter::operator()(nl_sock* sock) const { nl_socket_free(sock); }

core::Result<NlSocket> connectRoute() {
  NlSocket sock(nl_socket_alloc());
  if (!sock) {
    return core::Status(core::StatusCode::kInternal, "cannot allocate a netlink socket", NLE_NOMEM);
  }
  int err = nl_connect(sock.get(), NETLINK_ROUTE);
  if (err < 0) return nlStatus(err, "cannot open a NETLINK_ROUTE socket");
  return sock;
}

core::Result<int> ifindexOf(nl_sock* sock, const std::string& netns, const std::string& ifname) {
  rtnl_link* link = nullptr;
  int err = rtnl_link_get_kernel(sock, 0, ifname.c_str(), &link);
  if (err < 0) {
    if (nlStatusCode(err) == core::StatusCode::kNotFound) {
      return nlStatusWithMessage(err, noSuchDevice(netns, ifname));
    }
    return nlStatus(err, "cannot read link " + ifname);
  }
  int ifindex = rtnl_link_get_ifindex(link);
  rtnl_link_put(link);
  return ifindex;
}

bool isValidIfname(const std::string& ifname) {
  if (ifname.empty() || ifname.size() > 15 || ifname == "." || ifname == "..") return false;
  for (unsigned char c : ifname) {
    if (c <= ' ' || c >= 0x7f || c == '/' || c == ':' || c == '"' || c == '\'' || c == '\\') {
      return false;
    }
  }
  return true;
}

std::string noSuchDevice(const std::string& netns, const std::string& ifname) {
  return "no such device " + ifname + " in " +
         (netns.empty() ? std::string("the host namespace") : "netns " + netns);
}

}  // namespace fabric_chaos::sys
