#pragma once
// Numeric socket addresses for the ring transports (TCP and verbs both take --listen/--next as
// ADDR:PORT). Only numeric addresses: resolving a name would contact a DNS server nobody asked the
// workload to talk to. Pure apart from getaddrinfo; thread-safe.

#include <sys/socket.h>

#include <string>

#include "core/status.h"

namespace fabric_chaos::workload {

struct Endpoint {
  sockaddr_storage addr{};
  socklen_t len = 0;
  int family = AF_INET;
};

// "10.0.0.1:7000", "[fd00::1]:7000" for messages.
std::string hostPort(const std::string& addr, int port);

// kInvalidArgument naming the address when it is not a numeric IPv4/IPv6 address.
core::Result<Endpoint> resolveNumeric(const std::string& addr, int port);

}  // namespace fabric_chaos::workload
