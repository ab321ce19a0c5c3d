#pragma once
// The verbs shim's control channel: a UNIX stream socket at <dir>/verbs-<pid>.sock (mode 0600),
// served by a thread of its own so that the program's posts and polls never wait on it. Each
// connection sends request lines and gets one answer line per request
// (verbs_shim/control_protocol.h). Faults stay armed for their lease; without a renew in time
// the server disarms them itself: an agent that dies or loses the host leaves nothing armed.
// The agent finds shim-loaded processes by these sockets. Thread-safe.

#include <sys/types.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"
#include "verbs_shim/control_protocol.h"

namespace fabric_chaos::verbs_shim {

// What the server does with the requests it accepts; called from the server's thread only.
class ControlHandler {
 public:
  virtual ~ControlHandler() = default;
  virtual void arm(const ArmRequest& request) = 0;
  virtual void disarm() = 0;
  // The members of a status answer after "ok" and "pid": what the program is ("comm", "rank",
  // "devices") and what is armed ("armed": per fault, events seen and injections made).
  virtual nlohmann::json statusMembers() = 0;
};

std::string controlSocketPath(const std::string& dir, pid_t pid);

class ControlServer {
 public:
  // Binds <dir>/verbs-<pid>.sock (replacing a stale one of this pid) and starts serving.
  // kUnavailable naming the path when it cannot.
  static core::Result<std::unique_ptr<ControlServer>> start(const std::string& dir,
                                                            ControlHandler& handler);
  ~ControlServer();  // disarms, stops the thread, removes the socket
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;
  const std::string& path() const;

  struct State;

 private:
  explicit ControlServer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace fabric_chaos::verbs_shim
