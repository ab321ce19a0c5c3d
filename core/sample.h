#pragma once
// One timed iteration of a workload rank: the unit of measurement everything else is built on.

#include <cstdint>

namespace fabric_chaos::core {

struct Sample {
  int rank = 0;
  int64_t iteration = 0;
  double start_ms = 0;     // run-relative milliseconds (run origin = workload start)
  double duration_ms = 0;  // steady-clock duration of the collective
  int64_t bytes = 0;       // message size of the allreduce
};

}  // namespace fabric_chaos::core
