#pragma once
// The shipped pytorch-ddp script's own CSV log of its steps (--log FILE: step,t_start,duration_ms
// with t_start on CLOCK_MONOTONIC): what the DDP tiers compare the run's stored samples and its
// measured stall with, independently of fabric-chaos's parser.

#include <cstdint>
#include <map>
#include <string>

namespace fabric_chaos::testing {

struct LoggedStep {
  int64_t step = 0;
  double t_start_s = 0;
  double duration_ms = 0;
};

// The log at `path`, by step; empty when it cannot be read.
std::map<int64_t, LoggedStep> readStepLog(const std::string& path);

// The longest time between two consecutive steps' starts: the job's stall.
double longestGapMs(const std::map<int64_t, LoggedStep>& steps);

}  // namespace fabric_chaos::testing
