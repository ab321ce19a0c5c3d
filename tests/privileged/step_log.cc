#include "tests/privileged/step_log.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

namespace fabric_chaos::testing {

std::map<int64_t, LoggedStep> readStepLog(const std::string& path) {
  std::map<int64_t, LoggedStep> steps;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    LoggedStep s;
    if (std::sscanf(line.c_str(), "%ld,%lf,%lf", &s.step, &s.t_start_s, &s.duration_ms) == 3) {
      steps[s.step] = s;
    }
  }
  return steps;
}

double longestGapMs(const std::map<int64_t, LoggedStep>& steps) {
  double longest = 0, previous = -1;
  for (const auto& [n, s] : steps) {
    if (previous >= 0) longest = std::max(longest, (s.t_start_s - previous) * 1000.0);
    previous = s.t_start_s;
  }
  return longest;
}

}  // namespace fabric_chaos::testing
