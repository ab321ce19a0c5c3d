#pragma once
// One rank of an external workload (docs/workloads.md) as the agent sees any rank: the command's
// output becomes the rank line protocol of workload/report.h. Steps become samples, the first
// step makes the rank ready, and an exit or a silence past the limit becomes a rank error naming
// why, with the end of the command's stderr. Pure logic driven by the caller's clock; one thread.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "workload/report.h"
#include "workload/steps/step_parser.h"

namespace fabric_chaos::workload {

struct ExecRankOptions {
  int rank = 0;
  int world = 1;
  // No step for this long after the first one is a hang: the caller kills the command and the
  // rank dies. 0: not watched.
  int64_t silence_ms = 60000;
  // False for a rank whose command prints no steps (an MPI job where only rank 0 reports): it is
  // ready at once and never silent.
  bool reports_steps = true;
  int64_t flush_ms = 100;  // samples are written out at least this often
  size_t stderr_tail_lines = 20;
};

// Why an exec rank ended, as its rank_error event says ("reason").
enum class ExecRankEnd {
  kStopped,  // asked to stop (SIGTERM): not an error
  kExited,   // the command exited on its own, whatever its code
  kSilent,   // no step within silence_ms: killed
  kStartFailed,
};
std::string_view execRankEndName(ExecRankEnd end);  // "stopped", "exited", "silent", "start_failed"

class ExecRankReporter {
 public:
  using Emit = std::function<void(const std::string& line)>;
  ExecRankReporter(ExecRankOptions options, std::unique_ptr<StepParser> parser, Emit emit);

  // The command started at now_ns, on the clock every time this reporter is given and writes
  // (CLOCK_MONOTONIC for an agent's rank, CLOCK_REALTIME for srun's). The offsets move a step's
  // own times onto it: t_start (CLOCK_MONOTONIC) + monotonic_ns, t_wall (Unix time) + wall_ns.
  struct ClockOffsets {
    int64_t monotonic_ns = 0;
    int64_t wall_ns = 0;
  };
  void started(int64_t now_ns, ClockOffsets offsets);
  void stdoutLine(const std::string& line, int64_t now_ns);
  void stderrLine(const std::string& line);
  // Flushes samples that are due. True when the command has been silent for too long.
  bool tick(int64_t now_ns);
  // The command ended: writes the last samples, the rank_error event unless it was stopped, and
  // done. Returns the exit code the rank should exit with (0 only for kStopped).
  int finish(ExecRankEnd end, int exit_code, const std::string& message, int64_t now_ns);

  int64_t steps() const { return iterations_; }
  // The next iteration number (steps without a number of their own are counted on from the last).
  int64_t nextIteration() const { return next_iteration_; }

 private:
  void flush();

  ExecRankOptions options_;
  std::unique_ptr<StepParser> parser_;
  Emit emit_;
  int64_t started_ns_ = 0;
  ClockOffsets offsets_;
  bool ready_ = false;
  int64_t last_step_ns_ = 0;
  int64_t last_flush_ns_ = 0;
  int64_t iterations_ = 0;
  int64_t next_iteration_ = 0;
  int64_t lines_ = 0;
  std::string last_other_line_;  // the last stdout line that was not a step
  std::vector<RawSample> pending_;
  std::deque<std::string> stderr_tail_;
};

}  // namespace fabric_chaos::workload
