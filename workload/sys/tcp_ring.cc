#include "workload/sys/tcp_ring.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/unique_fd.h"
#include "workload/sys/byte_order.h"
#include "workload/sys/endpoint.h"

namespace fabric_chaos::workload {
namespace {

using core::Result;
using core::Status;
using core::StatusCode;

constexpr int64_t kPollSliceMs = 50;
constexpr int64_t kRetryNs = 50'000'000;  // between connection attempts to the next rank
constexpr size_t kHelloBytes = 16;        // "FCR1" rank world epoch (big-endian u32 each)
constexpr size_t kAckBytes = 8;           // "FCA1" epoch
constexpr size_t kMaxPending = 16;        // half-open accepted connections awaiting their hello

void tuneSocket(int fd, int buffer_bytes, int dscp) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (dscp > 0) {
    // The DS field's upper six bits; the ECN bits stay the kernel's. IPv6 has its own option.
    const int tos = dscp << 2;
    ::setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof(tos));
  }
  if (buffer_bytes > 0) {
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer_bytes, sizeof(buffer_bytes));
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer_bytes, sizeof(buffer_bytes));
  }
}

// SO_LINGER 0 makes close() send a RST instead of a FIN, as a host that vanished would.
void abortiveClose(int fd) {
  linger lg{};
  lg.l_onoff = 1;
  lg.l_linger = 0;
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
  ::close(fd);
}

int socketError(int fd) {
  int err = 0;
  socklen_t len = sizeof(err);
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
  return err;
}

int pollTimeoutMs(int64_t now_ns, int64_t until_ns) {
  int64_t ms = (until_ns - now_ns + 999'999) / 1'000'000;
  return static_cast<int>(std::clamp<int64_t>(ms, 0, kPollSliceMs));
}

}  // namespace

TcpRing::TcpRing(const TcpRingOptions& options) : options_(options) {}

TcpRing::~TcpRing() {
  disconnect();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

Result<std::unique_ptr<TcpRing>> TcpRing::listen(const TcpRingOptions& options) {
  if (options.world < 2 || options.rank < 0 || options.rank >= options.world) {
    return Status(StatusCode::kInvalidArgument, "a TCP ring needs world >= 2 and rank < world");
  }
  auto next = resolveNumeric(options.next_addr, options.next_port);
  if (!next.isOk()) return next.status().withContext("--next");
  auto local = resolveNumeric(options.listen_addr, options.listen_port);
  if (!local.isOk()) return local.status().withContext("--listen");

  std::unique_ptr<TcpRing> ring(new TcpRing(options));
  core::UniqueFd fd(::socket(local->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return core::errnoStatus(errno, "socket");
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  // Accepted sockets inherit these; the receive buffer must be set before listen() to take effect
  // on the window scale.
  tuneSocket(fd.get(), options.socket_buffer_bytes, options.dscp);
  const std::string where = hostPort(options.listen_addr, options.listen_port);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&local->addr), local->len) != 0) {
    return core::errnoStatus(errno, "bind " + where);
  }
  if (::listen(fd.get(), static_cast<int>(kMaxPending)) != 0) {
    return core::errnoStatus(errno, "listen " + where);
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
    return core::errnoStatus(errno, "getsockname " + where);
  }
  ring->listen_port_ = bound.ss_family == AF_INET6
                           ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                           : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  ring->listen_fd_ = fd.release();
  return ring;
}

bool TcpRing::stopRequested() const {
  return options_.stop != nullptr && options_.stop->load(std::memory_order_relaxed);
}

void TcpRing::disconnect() {
  if (next_fd_ >= 0) ::close(next_fd_);
  if (prev_fd_ >= 0) ::close(prev_fd_);
  next_fd_ = prev_fd_ = -1;
}

void TcpRing::resetConnections() {
  if (next_fd_ >= 0) abortiveClose(next_fd_);
  if (prev_fd_ >= 0) abortiveClose(prev_fd_);
  next_fd_ = prev_fd_ = -1;
}

Result<uint32_t> TcpRing::form(uint32_t epoch, int64_t deadline_ns) {
  disconnect();
  auto next = resolveNumeric(options_.next_addr, options_.next_port);
  if (!next.isOk()) return next.status();
  const int world = options_.world;
  const int prev_rank = (options_.rank - 1 + world) % world;
  const int next_rank = (options_.rank + 1) % world;
  const int64_t pending_timeout_ns = options_.peer_timeout_ms * 1'000'000;
  uint32_t max_epoch = epoch;

  // Outgoing: connect, send the hello, wait for the ack; any failure retries after kRetryNs.
  enum class Out { kWait, kConnecting, kHello, kAck, kDone };
  Out out = Out::kWait;
  core::UniqueFd out_fd;
  int64_t next_attempt_ns = 0;
  uint8_t hello[kHelloBytes];
  std::memcpy(hello, "FCR1", 4);
  putU32(hello + 4, static_cast<uint32_t>(options_.rank));
  putU32(hello + 8, static_cast<uint32_t>(world));
  putU32(hello + 12, epoch);
  size_t hello_sent = 0;
  uint8_t ack[kAckBytes];
  size_t ack_got = 0;
  std::string out_error = "no attempt yet";

  // Incoming: accepted connections waiting for their hello.
  struct Pending {
    core::UniqueFd fd;
    int64_t accepted_ns = 0;
    uint8_t hello[kHelloBytes] = {};
    size_t got = 0;
  };
  std::vector<Pending> pending;
  core::UniqueFd in_fd;
  std::string in_error = "nothing accepted yet";

  auto fail_out = [&](const std::string& why, int64_t now) {
    out_fd.reset();
    out = Out::kWait;
    next_attempt_ns = now + kRetryNs;
    out_error = why;
  };

  while (out != Out::kDone || !in_fd.valid()) {
    if (stopRequested()) return Status(StatusCode::kAborted, "stop requested while forming ring");
    int64_t now = core::steadyNowNs();
    if (now >= deadline_ns) {
      std::string msg = "ring not formed in time: ";
      msg += out == Out::kDone
                 ? "connected to next rank " + std::to_string(next_rank)
                 : "connecting to next rank " + std::to_string(next_rank) + " at " +
                       hostPort(options_.next_addr, options_.next_port) + ": " + out_error;
      msg += in_fd.valid()
                 ? "; accepted previous rank " + std::to_string(prev_rank)
                 : "; waiting for previous rank " + std::to_string(prev_rank) + ": " + in_error;
      return Status(StatusCode::kTimeout, msg);
    }

    if (out == Out::kWait && now >= next_attempt_ns) {
      out_fd.reset(::socket(next->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      if (!out_fd.valid()) return core::errnoStatus(errno, "socket");
      tuneSocket(out_fd.get(), options_.socket_buffer_bytes, options_.dscp);
      hello_sent = 0;
      ack_got = 0;
      if (::connect(out_fd.get(), reinterpret_cast<const sockaddr*>(&next->addr), next->len) == 0) {
        out = Out::kHello;
      } else if (errno == EINPROGRESS) {
        out = Out::kConnecting;
      } else {
        fail_out(std::string("connect: ") + std::strerror(errno), now);
      }
    }

    std::vector<pollfd> fds;
    fds.push_back({listen_fd_, POLLIN, 0});
    const size_t out_index = fds.size();
    if (out == Out::kConnecting || out == Out::kHello) {
      fds.push_back({out_fd.get(), POLLOUT, 0});
    } else if (out == Out::kAck) {
      fds.push_back({out_fd.get(), POLLIN, 0});
    }
    const size_t pending_index = fds.size();
    for (const auto& p : pending) fds.push_back({p.fd.get(), POLLIN, 0});

    int64_t wake_ns = deadline_ns;
    if (out == Out::kWait) wake_ns = std::min(wake_ns, next_attempt_ns);
    int rc = ::poll(fds.data(), fds.size(), pollTimeoutMs(now, wake_ns));
    if (rc < 0) {
      if (errno == EINTR) continue;
      return core::errnoStatus(errno, "poll");
    }
    now = core::steadyNowNs();

    // Outgoing side.
    if (out_index < pending_index && fds[out_index].revents != 0) {
      if (out == Out::kConnecting) {
        int err = socketError(out_fd.get());
        if (err != 0) {
          fail_out(std::string("connect: ") + std::strerror(err), now);
        } else {
          out = Out::kHello;
        }
      }
      if (out == Out::kHello) {
        ssize_t n = ::send(out_fd.get(), hello + hello_sent, kHelloBytes - hello_sent,
                           MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
          hello_sent += static_cast<size_t>(n);
          if (hello_sent == kHelloBytes) out = Out::kAck;
        } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          fail_out(std::string("sending handshake: ") + std::strerror(errno), now);
        }
      } else if (out == Out::kAck) {
        ssize_t n = ::recv(out_fd.get(), ack + ack_got, kAckBytes - ack_got, MSG_DONTWAIT);
        if (n == 0) {
          fail_out("the next rank closed the connection before acknowledging the handshake", now);
        } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          fail_out(std::string("waiting for handshake ack: ") + std::strerror(errno), now);
        } else if (n > 0) {
          ack_got += static_cast<size_t>(n);
          if (ack_got == kAckBytes) {
            if (std::memcmp(ack, "FCA1", 4) != 0) {
              fail_out("bad handshake ack", now);
            } else {
              max_epoch = std::max(max_epoch, getU32(ack + 4));
              out = Out::kDone;
            }
          }
        }
      }
    }

    // Existing pending connections: read their hello, validate, acknowledge.
    for (size_t i = 0; i < pending.size(); ++i) {
      Pending& p = pending[i];
      const short revents = fds[pending_index + i].revents;
      if (revents == 0) {
        if (now - p.accepted_ns > pending_timeout_ns) p.fd.reset();
        continue;
      }
      ssize_t n = ::recv(p.fd.get(), p.hello + p.got, kHelloBytes - p.got, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        p.fd.reset();
        continue;
      }
      if (n < 0) continue;
      p.got += static_cast<size_t>(n);
      if (p.got < kHelloBytes) continue;
      const uint32_t their_rank = getU32(p.hello + 4);
      const uint32_t their_world = getU32(p.hello + 8);
      if (std::memcmp(p.hello, "FCR1", 4) != 0 || their_rank != static_cast<uint32_t>(prev_rank) ||
          their_world != static_cast<uint32_t>(world)) {
        ++rejected_handshakes_;
        in_error = "rejected a handshake from rank " + std::to_string(their_rank) + " of world " +
                   std::to_string(their_world);
        p.fd.reset();
        continue;
      }
      // A connection whose peer already hung up is a leftover of an abandoned attempt.
      uint8_t probe = 0;
      ssize_t peek = ::recv(p.fd.get(), &probe, 1, MSG_PEEK | MSG_DONTWAIT);
      if (peek >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
        p.fd.reset();
        continue;
      }
      uint8_t reply[kAckBytes];
      std::memcpy(reply, "FCA1", 4);
      putU32(reply + 4, epoch);
      if (::send(p.fd.get(), reply, kAckBytes, MSG_NOSIGNAL | MSG_DONTWAIT) !=
          static_cast<ssize_t>(kAckBytes)) {
        p.fd.reset();
        continue;
      }
      // The previous rank keeps one connection at a time, so a later one supersedes an earlier.
      max_epoch = std::max(max_epoch, getU32(p.hello + 12));
      in_fd = std::move(p.fd);
    }
    std::erase_if(pending, [](const Pending& p) { return !p.fd.valid(); });

    // New connections.
    if (fds[0].revents != 0) {
      while (true) {
        int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;  // EAGAIN, or a connection that died in the backlog
        if (pending.size() >= kMaxPending) {
          ::close(fd);
          continue;
        }
        tuneSocket(fd, 0, options_.dscp);
        Pending p;
        p.fd.reset(fd);
        p.accepted_ns = now;
        pending.push_back(std::move(p));
      }
    }
  }
  next_fd_ = out_fd.release();
  prev_fd_ = in_fd.release();
  return max_epoch;
}

Status TcpRing::sendRecv(const void* send, size_t send_bytes, void* recv, size_t recv_bytes) {
  if (!connected()) return Status(StatusCode::kFailedPrecondition, "ring is not formed");
  const auto* src = static_cast<const uint8_t*>(send);
  auto* dst = static_cast<uint8_t*>(recv);
  size_t sent = 0;
  size_t got = 0;
  const int64_t timeout_ns = options_.peer_timeout_ms * 1'000'000;
  int64_t last_progress_ns = core::steadyNowNs();
  const std::string to_next =
      "connection to rank " + std::to_string((options_.rank + 1) % options_.world);
  const std::string from_prev =
      "connection from rank " +
      std::to_string((options_.rank - 1 + options_.world) % options_.world);

  while (sent < send_bytes || got < recv_bytes) {
    if (stopRequested()) return Status(StatusCode::kAborted, "stop requested");
    if (options_.abort_connections != nullptr &&
        options_.abort_connections->exchange(false, std::memory_order_relaxed)) {
      resetConnections();
      return Status(StatusCode::kAborted, "ring connections aborted by the test hook");
    }
    int64_t now = core::steadyNowNs();
    if (now - last_progress_ns >= timeout_ns) {
      return Status(StatusCode::kTimeout,
                    "no data moved for " + std::to_string(options_.peer_timeout_ms) + " ms (" +
                        (got < recv_bytes ? "waiting on " + from_prev : "waiting on " + to_next) +
                        ")");
    }
    // The next rank never sends on our outgoing connection, so readability there means EOF or
    // an error; on the incoming one, once this step's bytes are in, only POLLERR/POLLHUP count.
    pollfd fds[2] = {{next_fd_, static_cast<short>(POLLIN | (sent < send_bytes ? POLLOUT : 0)), 0},
                     {prev_fd_, static_cast<short>(got < recv_bytes ? POLLIN : 0), 0}};
    int rc = ::poll(fds, 2, pollTimeoutMs(now, last_progress_ns + timeout_ns));
    if (rc < 0) {
      if (errno == EINTR) continue;
      return core::errnoStatus(errno, "poll");
    }
    if (rc == 0) continue;
    bool progress = false;

    if (fds[0].revents & (POLLIN | POLLERR | POLLHUP)) {
      uint8_t byte = 0;
      ssize_t n = ::recv(next_fd_, &byte, 1, MSG_DONTWAIT);
      if (n == 0) return Status(StatusCode::kUnavailable, to_next + ": closed by the peer");
      if (n > 0) return Status(StatusCode::kInternal, to_next + ": unexpected data from the peer");
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return core::errnoStatus(errno, to_next);
      }
    }
    if (sent < send_bytes && (fds[0].revents & POLLOUT)) {
      while (sent < send_bytes) {
        ssize_t n = ::send(next_fd_, src + sent, send_bytes - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
          sent += static_cast<size_t>(n);
          progress = true;
          continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (n < 0 && errno == EINTR) continue;
        return core::errnoStatus(n < 0 ? errno : EPIPE, to_next);
      }
    }

    if (got < recv_bytes && (fds[1].revents & (POLLIN | POLLERR | POLLHUP))) {
      while (got < recv_bytes) {
        ssize_t n = ::recv(prev_fd_, dst + got, recv_bytes - got, MSG_DONTWAIT);
        if (n > 0) {
          got += static_cast<size_t>(n);
          progress = true;
          continue;
        }
        if (n == 0) return Status(StatusCode::kUnavailable, from_prev + ": closed by the peer");
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        if (errno == EINTR) continue;
        return core::errnoStatus(errno, from_prev);
      }
    } else if (got == recv_bytes && (fds[1].revents & (POLLERR | POLLHUP))) {
      int err = socketError(prev_fd_);
      if (err != 0) return core::errnoStatus(err, from_prev);
      return Status(StatusCode::kUnavailable, from_prev + ": closed by the peer");
    }
    if (progress) last_progress_ns = core::steadyNowNs();
  }
  return Status::ok();
}

}  // namespace fabric_chaos::workload
