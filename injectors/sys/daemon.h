#pragma once
// Starts and finds long-lived daemons that outlive the command that starts them: the IB lab's
// ibsim and OpenSM instances, and an SM that sm_failover restarts on revert. A daemon is detached
// (double fork, its own session), so it is nobody's child and survives `lab up` and the agent; it
// is found again later through /proc by what it is (its command name, network namespace and
// environment), not through a pid we remember. The only code besides sys/process.cc that forks.
// Thread-safe.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::sys {

struct DaemonSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in the caller's PATH, not env's
  // The daemon's whole environment ("NAME=value"); empty: this process's environment.
  std::vector<std::string> env;
  std::string cwd;    // "" = "/"
  std::string netns;  // a named namespace (/run/netns/<netns>); "" = this process's
  // Opened read-write as stdin: a FIFO stays open for reading and writing by the daemon itself,
  // so that it never reads an end of file when the last writer goes (ibsim busy-loops on one).
  // "" = /dev/null.
  std::string stdin_path;
  std::string log_path;  // stdout and stderr, appended; "" = /dev/null
};

// Starts the daemon and returns its pid once it has called exec. The kernel finishes that exec a
// moment later: /proc may still show an empty environ or the old name right after the return. A
// program that cannot be found
// or executed, a namespace, directory or file that cannot be entered or opened: an error naming
// it ("opensm: execvp opensm: No such file or directory", kNotFound), and nothing left running.
core::Result<pid_t> startDaemon(const DaemonSpec& spec);

// What /proc says about a running process.
struct ProcessInfo {
  pid_t pid = 0;
  std::string comm;                     // /proc/PID/comm: "opensm"
  std::vector<std::string> argv;        // /proc/PID/cmdline
  std::vector<std::string> env;         // /proc/PID/environ ("NAME=value")
  std::string cwd;                      // /proc/PID/cwd's target
  std::optional<uint64_t> netns_inode;  // /proc/PID/ns/net's inode
  uint64_t start_time = 0;              // sys/proc_stat.h
  // The value of one environment variable; nullopt when the process has none.
  std::optional<std::string> envValue(const std::string& name) const;
};

// Every live (not zombie) process named `comm` (the kernel keeps 15 characters of it), by pid.
// Processes that vanish while being read are left out.
std::vector<ProcessInfo> findProcesses(const std::string& comm);

// The inode of a named network namespace (/run/netns/<name>); "" = this process's namespace.
// nullopt when there is no such namespace.
std::optional<uint64_t> netnsInode(const std::string& netns);

}  // namespace fabric_chaos::sys
