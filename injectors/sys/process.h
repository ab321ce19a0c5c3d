#pragma once
// Starts child processes, optionally inside a network namespace, with stdout on a pipe. The only
// code that forks. Children get SIGTERM when their owner goes away (PR_SET_PDEATHSIG) so a dead
// controller never leaves ranks running. Thread-safe.

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::sys {

struct SpawnSpec {
  std::vector<std::string> argv;  // argv[0] is the path to execute
  std::string netns;              // "" = the caller's namespace
  bool capture_stdout = true;     // stdout on a pipe readable through ChildProcess::stdoutFd()
  std::string stderr_path;        // "" = inherit
  // stderr on a second pipe (ChildProcess::stderrFd()) instead; exclusive with stderr_path.
  bool capture_stderr = false;
  // The child leads a process group of its own, and ChildProcess::signal reaches the whole group:
  // a shell's children (and what they hold open, such as the pipes above) end with it.
  bool own_process_group = false;
};

class ChildProcess {
 public:
  virtual ~ChildProcess() = default;
  virtual pid_t pid() const = 0;
  virtual int stdoutFd() const = 0;            // -1 when not captured
  virtual int stderrFd() const { return -1; }  // -1 when not captured
  virtual core::Status signal(int signo) = 0;
  // Waits up to timeout_ms; returns the exit code (128+signal when killed), kTimeout if running.
  virtual core::Result<int> wait(int timeout_ms) = 0;
};

class ProcessLauncher {
 public:
  virtual ~ProcessLauncher() = default;
  virtual core::Result<std::unique_ptr<ChildProcess>> spawn(const SpawnSpec& spec) = 0;
};

std::unique_ptr<ProcessLauncher> makeForkExecLauncher();

// Ends a process this one did not start (a daemon found by pid): SIGTERM, then SIGKILL if it is
// still alive (sys::processAlive) after grace_ms. True when it is gone (or was never there).
bool terminateProcess(pid_t pid, int grace_ms);

// Moves the calling process to SCHED_FIFO at `priority` (1-99). kPermissionDenied without
// CAP_SYS_NICE.
core::Status enterRealtimeScheduling(int priority);

}  // namespace fabric_chaos::sys
