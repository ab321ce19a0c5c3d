#pragma once
// The TCP transport of the ring: the only workload code that touches sockets. It owns one
// listening socket (kept for the whole run) and the two ring connections: to the next rank (we
// connect) and from the previous rank (we accept). Only the two addresses in TcpRingOptions are
// ever contacted. Failures come back as Status and are never fatal: the caller disconnect()s and
// form()s again with a bumped epoch. Single-threaded: one rank thread calls everything; the
// atomics in the options may be set from any thread.
//
// RingLink::sendRecv failures:
//   kUnavailable, origin 0     the peer closed the connection (EOF)
//   kUnavailable/kInternal     a socket error; origin is the errno (ECONNRESET, EPIPE, ...)
//   kTimeout                   no byte moved in either direction for peer_timeout_ms
//   kAborted                   stop was requested, or the test hook aborted the connections

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "workload/ring.h"

namespace fabric_chaos::workload {

struct TcpRingOptions {
  int rank = 0;
  int world = 2;
  std::string listen_addr = "127.0.0.1";  // numeric IPv4 or IPv6
  int listen_port = 0;                    // 0: the kernel picks one (see listenPort())
  std::string next_addr = "127.0.0.1";
  int next_port = 0;
  int64_t peer_timeout_ms = 10000;
  // 0 keeps the kernel's buffer autotuning (best on most hosts: a fixed SO_SNDBUF is capped by
  // net.core.wmem_max, usually far below the autotuned maximum).
  int socket_buffer_bytes = 0;
  // IPv4 DSCP (IPv6 traffic class) of both connections, 0-63; accepted ones inherit it from the
  // listening socket. 0 leaves the kernel's default.
  int dscp = 0;
  const std::atomic<bool>* stop = nullptr;  // polled at least every 50 ms inside every wait
  // Test hook: when it becomes true, sendRecv resets both ring connections (SO_LINGER 0, as a
  // crashing host would), clears the flag and returns kAborted.
  std::atomic<bool>* abort_connections = nullptr;
};

class TcpRing : public RingLink {
 public:
  // Binds and listens (SO_REUSEADDR) on listen_addr:listen_port.
  static core::Result<std::unique_ptr<TcpRing>> listen(const TcpRingOptions& options);
  ~TcpRing() override;
  TcpRing(const TcpRing&) = delete;
  TcpRing& operator=(const TcpRing&) = delete;

  int listenPort() const { return listen_port_; }

  // Connects to the next rank (retrying every 50 ms) and accepts from the previous one,
  // concurrently, until both handshakes are done. The connector sends "FCR1", rank, world and
  // epoch; the acceptor answers "FCA1" and its own epoch, or closes a connection whose rank is not
  // our previous rank or whose world differs, and keeps accepting. Returns the highest epoch seen
  // (ours or a neighbour's); kTimeout at deadline_ns, kAborted on stop.
  core::Result<uint32_t> form(uint32_t epoch, int64_t deadline_ns);

  // Closes both ring connections; the neighbours see EOF and tear down their side too.
  void disconnect();
  bool connected() const { return next_fd_ >= 0 && prev_fd_ >= 0; }

  core::Status sendRecv(const void* send, size_t send_bytes, void* recv,
                        size_t recv_bytes) override;

  // Connections closed during form() because their handshake was wrong (for tests and logs).
  int rejectedHandshakes() const { return rejected_handshakes_; }

 private:
  explicit TcpRing(const TcpRingOptions& options);
  bool stopRequested() const;
  void resetConnections();

  TcpRingOptions options_;
  int listen_fd_ = -1;
  int listen_port_ = 0;
  int next_fd_ = -1;  // we send on it
  int prev_fd_ = -1;  // we receive on it
  int rejected_handshakes_ = 0;
};

}  // namespace fabric_chaos::workload
