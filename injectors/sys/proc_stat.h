#pragma once
// What the kernel says about a process in /proc/PID/stat: its state and its start time. The start
// time tells a recorded process from a later one that reused its pid; the state tells a zombie,
// which kill(pid, 0) still reports alive although its descriptors (and locks) are gone.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace fabric_chaos::sys {

struct ProcessStat {
  char state = '?';         // field 3: R, S, D, Z, X, ...
  uint64_t start_time = 0;  // field 22: clock ticks after boot
  bool zombie() const { return state == 'Z' || state == 'X'; }
};

// The fields of one /proc/PID/stat line. The command name (field 2) may hold spaces and
// parentheses, so fields are counted after its last ')'. nullopt for a line too short.
std::optional<ProcessStat> parseProcessStat(std::string_view line);

// /proc/PID/stat of pid, read now; nullopt when there is no such process.
std::optional<ProcessStat> readProcessStat(pid_t pid);

// The kernel's start time of pid; nullopt when no such process.
std::optional<uint64_t> processStartTime(pid_t pid);

// Whether pid is a process that has not exited: it exists (kill(pid, 0), EPERM counts) and is
// not a zombie. A process whose stat cannot be read counts as alive: the caller must not take
// over what a live one may hold.
bool processAlive(pid_t pid);

}  // namespace fabric_chaos::sys
