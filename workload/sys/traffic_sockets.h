#pragma once
// The traffic generator's sockets (app/traffic_cmd.cc): a nonblocking TCP listener, nonblocking
// connects with the flow's DSCP, reads and writes that never block, and one wait for readiness.
// Nothing here retries or decides: a failure comes back as a Status carrying its errno, and the
// caller closes the socket and tries again later. One thread per socket.

#include <signal.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/unique_fd.h"

namespace fabric_chaos::workload {

// What one read or write did.
struct Transfer {
  enum class Kind {
    kMoved,       // `bytes` (> 0) moved
    kWouldBlock,  // nothing to read, or no room to write, now
    kClosed,      // read: the peer sent FIN
    kFailed,      // `error` carries the errno (ECONNRESET, EPIPE, ETIMEDOUT...)
  };
  Kind kind = Kind::kWouldBlock;
  int64_t bytes = 0;
  core::Status error;
};

struct AcceptedFlow;

class TrafficSocket {
 public:
  TrafficSocket() = default;

  // A nonblocking listener on addr:port (numeric), SO_REUSEADDR. Failures name the address.
  static core::Result<TrafficSocket> listen(const std::string& addr, int port);
  // Starts a nonblocking connect to addr:port from a socket with IP_TOS (IPv6: IPV6_TCLASS)
  // dscp << 2, TCP_USER_TIMEOUT 10 s (unacknowledged data for that long fails the flow) and,
  // unless "", TCP_CONGESTION congestion_control. source_port > 0 binds that local port first
  // (SO_REUSEADDR; EADDRINUSE while the previous connection on it lingers). Refused or
  // unreachable may come back here or later from connectOutcome().
  static core::Result<TrafficSocket> connect(const std::string& addr, int port, int dscp,
                                             const std::string& congestion_control,
                                             int source_port = 0);
  // Whether this host's TCP offers `congestion_control` to this process: kNotFound naming it and
  // what the host has when not.
  static core::Status checkCongestionControl(const std::string& congestion_control);

  // Listener: the next pending connection, nullopt when none is waiting.
  core::Result<std::optional<AcceptedFlow>> accept();
  // A connect in progress that became writable: OK when it is established, else why not.
  core::Status connectOutcome() const;

  Transfer read(void* data, size_t size);
  Transfer write(const void* data, size_t size);

  int fd() const { return fd_.get(); }
  bool valid() const { return fd_.valid(); }
  void close() { fd_.reset(); }

 private:
  explicit TrafficSocket(int fd) : fd_(fd) {}
  core::UniqueFd fd_;
};

struct AcceptedFlow {
  TrafficSocket socket;
  std::string peer;  // "10.0.0.2:41234", "[fd00::2]:41234"
};

// One socket to wait for, and what it is ready for after waitForSockets.
struct SocketInterest {
  int fd = -1;
  bool read = false;
  bool write = false;
  bool readable = false;  // set by waitForSockets
  bool writable = false;  // set by waitForSockets
  bool failed = false;    // POLLERR/POLLHUP/POLLNVAL: a read or write will say why
};

// Waits until a socket is ready, timeout_ns passes or a signal arrives. During the wait the
// thread's signal mask is `mask` (ppoll), so that signals blocked otherwise end the wait without
// a race; nullptr leaves the mask as it is. Returns how many sockets are ready (0: timeout or
// signal).
int waitForSockets(std::vector<SocketInterest>& interests, int64_t timeout_ns,
                   const sigset_t* mask);

}  // namespace fabric_chaos::workload
