#pragma once
// Long-running fault processes ("emitters": a pause-frame sender, a traffic generator). A fault of
// a long-running kind starts one with its apply and stops it with its revert; in between the
// emitter runs on its own and prints one JSON report per line on stdout, which state() returns.
//
// What makes them safe to leave running:
// - They are children of one thread of this process that lives as long as it does, so
//   PR_SET_PDEATHSIG (tied to the forking thread) kills them when this process dies.
// - Each is recorded in record_dir (<key>.json: pid, the kernel's start time of that pid and the
//   boot id) until it is stopped, so a later incarnation of this process (serve after a crash, its
//   guardian, an agent restarted) stops an emitter it did not start, by its key, and
//   stopRecorded() sweeps them all at start-up. A record whose pid now belongs to another process
//   (another start time or boot) is dropped, never signalled.
// - stderr goes to record_dir/<key>.log; an emitter that dies by itself has its exit code and the
//   log's tail in state().
// Thread-safe.

#include <sys/types.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "injectors/sys/process.h"

namespace fabric_chaos::sys {

struct EmitterSpec {
  std::string key;  // one emitter per key: the fault's kind and target
  std::vector<std::string> argv;
  std::string netns;  // "" = this process's namespace
  // start() returns once the emitter printed its first report, or fails with its log's tail when
  // it exits first, or when nothing came within this long.
  int ready_timeout_ms = 3000;
};

struct EmitterState {
  bool running = false;
  pid_t pid = 0;
  std::optional<int> exit_code;  // once it has ended (128+N: killed by signal N)
  nlohmann::json last_report;    // the last JSON line it printed; null before the first
  int reports = 0;               // lines read
  std::string log_tail;          // the end of its stderr, when it ended
};

// What a long-running kind's observe reports of one emitter: {"running", "pid", "report" (the
// last report), "exit_code"? and "log"? once it ended}.
nlohmann::json toJson(const EmitterState& state);

class Emitters {
 public:
  virtual ~Emitters() = default;
  // Starts the emitter for spec.key. One already running under that key: ok, nothing started.
  virtual core::Status start(const EmitterSpec& spec) = 0;
  // kNotFound when no emitter with that key was started by this process.
  virtual core::Result<EmitterState> state(const std::string& key) = 0;
  // SIGTERM, up to grace_ms for it to finish (an emitter may send a last frame), then SIGKILL;
  // returns its final state. Also stops an emitter only known from its record. None: ok, with a
  // default state.
  virtual core::Result<EmitterState> stop(const std::string& key, int grace_ms) = 0;
  // Stops every recorded emitter (start-up recovery); how many were still running.
  virtual int stopRecorded(int grace_ms) = 0;
};

// `launcher` forks; the emitters keep a thread of their own for it (see above).
std::unique_ptr<Emitters> makeProcessEmitters(std::string record_dir,
                                              std::unique_ptr<ProcessLauncher> launcher);

}  // namespace fabric_chaos::sys
