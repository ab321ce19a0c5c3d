#pragma once
// The adapter over sys/daemon.h and sys/process.h for code that starts, finds and ends daemons
// it did not necessarily start (the IB lab's ibsim and OpenSMs; sm_failover's kill and restart;
// the IB link kinds' simulator console), so that its logic is unit-tested with a fake. The real
// one is thread-safe.

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "injectors/sys/daemon.h"

namespace fabric_chaos::sys {

class DaemonControl {
 public:
  virtual ~DaemonControl() = default;
  virtual core::Result<pid_t> start(const DaemonSpec& spec) = 0;
  // Live (not zombie) processes named `comm`.
  virtual std::vector<ProcessInfo> find(const std::string& comm) = 0;
  virtual std::optional<uint64_t> netnsInode(const std::string& netns) = 0;
  virtual bool alive(pid_t pid) = 0;
  // kNotFound when there is no such process.
  virtual core::Status signal(pid_t pid, int signo) = 0;
  // Until pid is gone (or a zombie); false when it still lives after timeout_ms.
  virtual bool waitGone(pid_t pid, int timeout_ms) = 0;
  // SIGTERM, then SIGKILL after grace_ms; true when it is gone.
  virtual bool terminate(pid_t pid, int grace_ms) = 0;
  // /proc/PID/comm without its newline: "opensm"; "" when it is gone.
  virtual std::string commandName(pid_t pid) = 0;
  // Where the process's file descriptor `fd` points (/proc/PID/fd/N): "/run/x/opensm.out",
  // "pipe:[123]"; "" when unknown.
  virtual std::string descriptorTarget(pid_t pid, int fd) = 0;
  // Appends `line` and a newline to the FIFO or file at `path` without blocking: kUnavailable
  // when a FIFO has no reader (ibsim is gone).
  virtual core::Status writeLine(const std::string& path, const std::string& line) = 0;
};

std::unique_ptr<DaemonControl> makeDaemonControl();

}  // namespace fabric_chaos::sys
