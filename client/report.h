#pragma once
// The reports of `fabric-chaos run`: the verdict block printed per run, the JUnit XML and the
// JSON report. Pure functions of an Outcome (client/outcome.h); table-tested.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "client/outcome.h"

namespace fabric_chaos::client {

// The block printed at the end for one run:
//   run 12  link-flap  failed  score 71.4
//     gate min_score         FAILED  score 71.4 < 80.0
//     ...
//     stop: busbw_below (busbw 0.1 GB/s for 2 s)
//     http://127.0.0.1:8080/v1/runs/12
std::string verdictBlock(const FollowedRun& run);
// Every run's block, then one line "verdict: passed (exit 0)"; with the client's error if any.
std::string verdictReport(const Outcome& outcome);

// JUnit XML: one <testsuite> named after the scenario or suite; one <testcase> per run and one per
// fault step ("<scenario>/step-N"), failing when the run failed a gate naming that step.
std::string junitXml(const Outcome& outcome);

// {"verdict", "exit_code", "error"?, "suite_run"?, "runs": [full GET /v1/runs/ID bodies]}.
nlohmann::json jsonReport(const Outcome& outcome);

// XML attribute/text escaping; characters XML 1.0 forbids become U+FFFD.
std::string xmlEscape(const std::string& text);

// The steps a gate verdict's detail names ("step 0 recovered in 1.2 s > 1 ms; step 2 ...").
std::vector<int> stepsNamedIn(const std::string& detail);

}  // namespace fabric_chaos::client
