#pragma once
// What `fabric-chaos run` found out: the runs it followed (each as the server's full
// GET /v1/runs/ID body) and the verdict and exit code that follow from them. Plain values shared
// by the follow loop (client/follow.h) and the report writers (client/report.h).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fabric_chaos::client {

inline constexpr int kExitPassed = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitError = 2;

struct FollowedRun {
  std::string scenario;
  int64_t id = 0;       // 0: never started (a suite skipped it)
  std::string state;    // the last state seen ("skipped" for a suite entry never started)
  nlohmann::json body;  // the last GET /v1/runs/ID body (null when never fetched)
  std::string url;      // <server>/v1/runs/ID
  std::string problem;  // the client's own reason when it stopped following: timeout, Ctrl-C
};

struct Outcome {
  bool suite = false;
  std::string name;  // the scenario or the suite name
  int64_t suite_run_id = 0;
  nlohmann::json suite_body;  // the last GET /v1/suite-runs/ID body
  std::vector<FollowedRun> runs;
  std::string
      error;  // why the client gave up (unreachable, refused, timeout, interrupted); "" if not
  int exit_code = kExitError;
  std::string verdict = "error";  // "passed" | "failed" | "error"
};

// 0 when every run passed (and the suite, if any), 1 when a run (or the suite) failed and nothing
// went wrong otherwise, 2 on any error, abort, interruption or client-side problem. Also sets
// outcome.verdict.
void settleVerdict(Outcome& outcome);

}  // namespace fabric_chaos::client
