#pragma once
// The agent's end of the verbs shims' control channels (verbs_shim/sys/control_server.h): the
// shim-loaded programs of this host, found by their sockets <dir>/verbs-<pid>.sock, and the arm,
// renew and disarm requests sent to one of them, a line each way. Every exchange has a deadline
// (1 s): a program that is stuck, stopped or dead never holds up the agent. Thread-safe: each
// call has a connection of its own.

#include <sys/types.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "verbs_shim/control_protocol.h"

namespace fabric_chaos::sys {

// One shim-loaded program, as its status answer describes it.
struct ShimProcess {
  pid_t pid = 0;
  std::string comm;                  // "ib_write_bw", as /proc/PID/comm
  std::optional<int> rank;           // as its launcher gave it (FABRIC_CHAOS_RANK, RANK, ...)
  std::vector<std::string> devices;  // the RDMA devices it opened: "rxe0"
  nlohmann::json armed = nlohmann::json::array();  // per armed fault: kind, seen, fired
  std::string socket = {};                         // its control socket's path
};

class VerbsShimChannel {
 public:
  virtual ~VerbsShimChannel() = default;
  // Every program whose socket answers, by pid. A socket whose program has exited is removed
  // and left out; one that does not answer in time is left out (it could not be armed either).
  // kUnavailable when the directory cannot be read (a missing one is an empty list).
  virtual core::Result<std::vector<ShimProcess>> list() = 0;
  // Each: kNotFound when the program has exited (or never had a socket here);
  // kFailedPrecondition with the shim's reason when it refuses (a renew with nothing armed);
  // kTimeout when it does not answer in time; kUnavailable for other transport failures. The
  // messages name the pid and the socket.
  virtual core::Status arm(pid_t pid, const verbs_shim::ArmRequest& request) = 0;
  virtual core::Status renew(pid_t pid) = 0;
  virtual core::Status disarm(pid_t pid) = 0;
  // Where the sockets are, for messages and capabilities.
  virtual std::string directory() const = 0;
};

// The sockets in `dir` (the agent's <state dir>/verbs, which programs name in
// FABRIC_CHAOS_VERBS_DIR). `deadline_ms`: the most one exchange may take.
std::unique_ptr<VerbsShimChannel> makeVerbsShimChannel(std::string dir, int deadline_ms = 1000);

// The request line of an arm, as verbs_shim/control_protocol.h reads it (without the newline).
std::string armRequestLine(const verbs_shim::ArmRequest& request);

}  // namespace fabric_chaos::sys
