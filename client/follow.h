#pragma once
// The follow loop of `fabric-chaos run`: submits the run or suite run, polls it to its end while
// reporting progress, aborts it on Ctrl-C or timeout, and settles the verdict. All I/O goes through
// ApiClient, core::Clock and the given streams, so it is unit-tested with fakes. One thread.

#include <functional>
#include <ostream>
#include <string>

#include "client/api_client.h"
#include "client/options.h"
#include "client/outcome.h"
#include "core/clock.h"

namespace fabric_chaos::client {

// Renders progress: on a terminal one line rewritten in place; otherwise one plain line per state
// change and one every `plain_interval_ms` while the state stays the same.
class ProgressPrinter {
 public:
  ProgressPrinter(std::ostream& out, bool tty, int64_t plain_interval_ms = 5000)
      : out_(out), tty_(tty), plain_interval_ms_(plain_interval_ms) {}

  // `run` is a GET /v1/runs/ID body (its `live` block read when present); elapsed_ms is the
  // client's own measure, used when the server gives none.
  void update(const std::string& label, const nlohmann::json& run, int64_t now_ms,
              int64_t elapsed_ms);
  // Ends a rewritten line before other output (no-op when nothing is pending).
  void breakLine();

  // "injecting  12.3 s  busbw 1.23 GB/s  faults 1" (pure; exposed for tests).
  static std::string describe(const nlohmann::json& run, int64_t elapsed_ms);

 private:
  std::ostream& out_;
  bool tty_;
  int64_t plain_interval_ms_;
  std::string last_label_;
  std::string last_state_;
  int64_t last_plain_ms_ = 0;
  bool pending_line_ = false;
};

struct FollowDeps {
  ApiClient* api = nullptr;
  core::Clock* clock = nullptr;
  std::function<bool()> interrupted;  // true once Ctrl-C was pressed
  ProgressPrinter* progress = nullptr;
  std::ostream* out = nullptr;  // messages: "run 3 started", "aborted run 3"
};

// Runs the whole command. Never throws; every failure ends up in Outcome (error, exit code 2).
Outcome runAndFollow(const RunOptions& options, FollowDeps& deps);

// How long the loop keeps retrying GET calls while the server is unreachable before giving up.
inline constexpr int64_t kUnreachableGraceMs = 10000;
// After an abort request, how long to wait for the run to reach a final state for the report.
inline constexpr int64_t kAbortSettleMs = 15000;

}  // namespace fabric_chaos::client
