#pragma once
// Private to injectors/sys: turns libnl NLE_* codes into Status and owns the libnl route socket
// used by links.cc and qdisc.cc. Not for use outside injectors/sys (it is not an adapter).

#include <memory>
#include <string>

#include "core/status.h"

struct nl_sock;

namespace fabric_chaos::sys {

// `nle` is a libnl error code, either sign. The message is "what: <nl_geterror>", the origin
// the positive NLE_* code. NLE_OBJ_NOTFOUND/NLE_NODEV -> kNotFound, NLE_PERM/NLE_NOACCESS ->
// kPermissionDenied, NLE_OPNOTSUPP/NLE_AF_NOSUPPORT -> kNotSupported, ...
core::Status nlStatus(int nle, const std::string& what);

// Same mapping, but with a caller-chosen message.
core::Status nlStatusWithMessage(int nle, std::string message);

core::StatusCode nlStatusCode(int nle);

struct NlSocketDeleter {
  void operator()(nl_sock* sock) const;
};
using NlSocket = std::unique_ptr<nl_sock, NlSocketDeleter>;

// A NETLINK_ROUTE socket bound to the calling thread's network namespace.
core::Result<NlSocket> connectRoute();

// ifindex of ifname in the calling thread's namespace; kNotFound names the namespace.
core::Result<int> ifindexOf(nl_sock* sock, const std::string& netns, const std::string& ifname);

// Interface names the kernel could accept (1..15 bytes, no '/', ':', whitespace or quotes).
bool isValidIfname(const std::string& ifname);

// "no such device X in netns Y" (netns "" reads as "the host namespace").
std::string noSuchDevice(const std::string& netns, const std::string& ifname);

}  // namespace fabric_chaos::sys
