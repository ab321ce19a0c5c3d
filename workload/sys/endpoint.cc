#include "workload/sys/endpoint.h"

#include <netdb.h>

#include <cstring>

namespace fabric_chaos::workload {

std::string hostPort(const std::string& addr, int port) {
  return (addr.find(':') != std::string::npos ? "[" + addr + "]" : addr) + ":" +
         std::to_string(port);
}

core::Result<Endpoint> resolveNumeric(const std::string& addr, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  int rc = ::getaddrinfo(addr.c_str(), service.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    return core::Status(core::StatusCode::kInvalidArgument,
                        "\"" + addr + "\" is not a numeric IP address: " + ::gai_strerror(rc));
  }
  Endpoint ep;
  std::memcpy(&ep.addr, found->ai_addr, found->ai_addrlen);
  ep.len = found->ai_addrlen;
  ep.family = found->ai_family;
  ::freeaddrinfo(found);
  return ep;
}

}  // namespace fabric_chaos::workload
