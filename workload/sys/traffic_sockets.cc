#include "workload/sys/traffic_sockets.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include <cerrno>
#include <fstream>

#include "workload/sys/endpoint.h"

namespace fabric_chaos::workload {
namespace {

using core::Result;
using core::Status;

constexpr int kListenBacklog = 256;
constexpr unsigned kUserTimeoutMs = 10'000;

std::string peerName(const sockaddr_storage& addr) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(addr);
    ::inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof(text));
    return hostPort(text, ntohs(in6.sin6_port));
  }
  const auto& in4 = reinterpret_cast<const sockaddr_in&>(addr);
  ::inet_ntop(AF_INET, &in4.sin_addr, text, sizeof(text));
  return hostPort(text, ntohs(in4.sin_port));
}

Transfer failed(int err, const char* what) {
  Transfer t;
  t.kind = Transfer::Kind::kFailed;
  t.error = core::errnoStatus(err, what);
  return t;
}

}  // namespace

Result<TrafficSocket> TrafficSocket::listen(const std::string& addr, int port) {
  auto endpoint = resolveNumeric(addr, port);
  if (!endpoint.isOk()) return endpoint.status();
  const std::string where = hostPort(addr, port);
  TrafficSocket sock(::socket(endpoint->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!sock.valid()) return core::errnoStatus(errno, "socket for " + where);
  int one = 1;
  ::setsockopt(sock.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(sock.fd(), reinterpret_cast<const sockaddr*>(&endpoint->addr), endpoint->len) != 0) {
    return core::errnoStatus(errno, "bind " + where);
  }
  if (::listen(sock.fd(), kListenBacklog) != 0) return core::errnoStatus(errno, "listen " + where);
  return sock;
}

namespace {

core::Status setCongestionControl(int fd, const std::string& name) {
  if (::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(),
                   static_cast<socklen_t>(name.size())) == 0) {
    return core::Status::ok();
  }
  return core::errnoStatus(errno, "congestion control " + name);
}

}  // namespace

core::Status TrafficSocket::checkCongestionControl(const std::string& congestion_control) {
  TrafficSocket probe(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!probe.valid()) return core::errnoStatus(errno, "socket");
  if (setCongestionControl(probe.fd(), congestion_control).isOk()) return core::Status::ok();
  std::ifstream available("/proc/sys/net/ipv4/tcp_available_congestion_control");
  std::string names;
  std::getline(available, names);
  return core::Status(core::StatusCode::kNotFound, "congestion control " + congestion_control +
                                                       " is not available on this host (it has: " +
                                                       (names.empty() ? "unknown" : names) + ")");
}

Result<TrafficSocket> TrafficSocket::connect(const std::string& addr, int port, int dscp,
                                             const std::string& congestion_control,
                                             int source_port) {
  auto endpoint = resolveNumeric(addr, port);
  if (!endpoint.isOk()) return endpoint.status();
  const std::string where = hostPort(addr, port);
  TrafficSocket sock(::socket(endpoint->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!sock.valid()) return core::errnoStatus(errno, "socket for " + where);
  // The DSCP goes in the upper six bits; for TCP the kernel keeps the ECN bits its own.
  const int tos = dscp << 2;
  const int rc = endpoint->family == AF_INET6
                     ? ::setsockopt(sock.fd(), IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof(tos))
                     : ::setsockopt(sock.fd(), IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
  if (rc != 0) return core::errnoStatus(errno, "set DSCP " + std::to_string(dscp));
  if (!congestion_control.empty()) {
    FC_RETURN_IF_ERROR(setCongestionControl(sock.fd(), congestion_control));
  }
  const unsigned user_timeout = kUserTimeoutMs;
  ::setsockopt(sock.fd(), IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof(user_timeout));
  if (source_port > 0) {
    int one = 1;
    ::setsockopt(sock.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    auto local = resolveNumeric(endpoint->family == AF_INET6 ? "::" : "0.0.0.0", source_port);
    if (!local.isOk()) return local.status();
    if (::bind(sock.fd(), reinterpret_cast<const sockaddr*>(&local->addr), local->len) != 0) {
      return core::errnoStatus(errno, "bind source port " + std::to_string(source_port));
    }
  }
  if (::connect(sock.fd(), reinterpret_cast<const sockaddr*>(&endpoint->addr), endpoint->len) !=
          0 &&
      errno != EINPROGRESS) {
    return core::errnoStatus(errno, "connect " + where);
  }
  return sock;
}

Result<std::optional<AcceptedFlow>> TrafficSocket::accept() {
  sockaddr_storage peer{};
  socklen_t len = sizeof(peer);
  const int fd =
      ::accept4(fd_.get(), reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) {
    // A connection reset before we took it is gone; nothing else is waiting for now.
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNABORTED || errno == EINTR) {
      return std::optional<AcceptedFlow>();
    }
    return core::errnoStatus(errno, "accept");
  }
  return std::optional<AcceptedFlow>(AcceptedFlow{TrafficSocket(fd), peerName(peer)});
}

Status TrafficSocket::connectOutcome() const {
  int err = 0;
  socklen_t len = sizeof(err);
  if (::getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err != 0) return core::errnoStatus(err, "connect");
  sockaddr_storage peer{};
  len = sizeof(peer);
  if (::getpeername(fd_.get(), reinterpret_cast<sockaddr*>(&peer), &len) != 0) {
    return core::errnoStatus(errno == ENOTCONN ? ECONNREFUSED : errno, "connect");
  }
  return Status::ok();
}

Transfer TrafficSocket::read(void* data, size_t size) {
  const ssize_t n = ::recv(fd_.get(), data, size, MSG_DONTWAIT);
  if (n > 0) return Transfer{Transfer::Kind::kMoved, n, Status::ok()};
  if (n == 0) return Transfer{Transfer::Kind::kClosed, 0, Status::ok()};
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return Transfer{};
  return failed(errno, "read");
}

Transfer TrafficSocket::write(const void* data, size_t size) {
  const ssize_t n = ::send(fd_.get(), data, size, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n > 0) return Transfer{Transfer::Kind::kMoved, n, Status::ok()};
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return Transfer{};
  return failed(n < 0 ? errno : EPIPE, "write");
}

int waitForSockets(std::vector<SocketInterest>& interests, int64_t timeout_ns,
                   const sigset_t* mask) {
  std::vector<pollfd> fds(interests.size());
  for (size_t i = 0; i < interests.size(); ++i) {
    fds[i].fd = interests[i].fd;
    fds[i].events =
        static_cast<short>((interests[i].read ? POLLIN : 0) | (interests[i].write ? POLLOUT : 0));
  }
  if (timeout_ns < 0) timeout_ns = 0;
  timespec timeout{};
  timeout.tv_sec = timeout_ns / 1'000'000'000;
  timeout.tv_nsec = timeout_ns % 1'000'000'000;
  const int ready = ::ppoll(fds.data(), fds.size(), &timeout, mask);
  for (size_t i = 0; i < interests.size(); ++i) {
    const short revents = ready > 0 ? fds[i].revents : 0;
    interests[i].readable = (revents & POLLIN) != 0;
    interests[i].writable = (revents & POLLOUT) != 0;
    interests[i].failed = (revents & (POLLERR | POLLHUP | POLLNVAL)) != 0;
  }
  return ready > 0 ? ready : 0;
}

}  // namespace fabric_chaos::workload
