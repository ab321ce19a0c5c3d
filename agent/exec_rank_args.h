#pragma once
// The command line of `fabric-chaos exec-rank` for one rank of an external workload: what an
// agent runs on its host, and what a Slurm job step runs on the rank's node (the controller puts
// it in the step's multi-prog file). Pure; any thread.

#include <cstddef>
#include <string>
#include <vector>

#include "agent/agent.h"

namespace fabric_chaos::agent {

// How a rank loads the verbs fault library: LD_PRELOAD, its control directory, and its rank
// (FABRIC_CHAOS_RANK, which the library reports so that a fault can name the rank).
struct VerbsShimLoad {
  std::string library;
  std::string dir;
};

// What differs when srun, not an agent, starts the rank (workload/exec_rank_options.h).
struct ExecRankReporting {
  bool wall_clock = false;
  size_t max_line_bytes = 0;
};

// The arguments after "exec-rank": the rank's place in the job, how its output reads as steps,
// the scenario's environment (and the verbs fault library's, when spec.verbs_shim), then "--"
// and the command.
std::vector<std::string> execRankArguments(const RankSpec& spec, const VerbsShimLoad& shim,
                                           const ExecRankReporting& reporting = {});

}  // namespace fabric_chaos::agent
