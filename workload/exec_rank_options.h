#pragma once
// `fabric-chaos exec-rank`'s command line (docs/workloads.md): which rank, where its job's
// rendezvous is, how its output is read, and the command after "--". The agent builds it from a
// RankSpec; parsing and the environment the command gets are pure, so both are unit-tested.

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "workload/exec_rank.h"
#include "workload/steps/step_parser.h"

namespace fabric_chaos::workload {

struct ExecRankCommand {
  ExecRankOptions rank;
  StepParserSpec parser;
  int local_rank = 0;
  std::string master_addr;           // rank 0's host address: MASTER_ADDR
  int master_port = 0;               // MASTER_PORT
  std::string host_addr;             // this rank's address in the fabric
  std::string ifname;                // the interface that address is on
  std::vector<std::string> env;      // NAME=VALUE, the scenario's, applied after ours
  std::string script;                // a shipped script ("pytorch-ddp") that "{script}" names
  std::vector<std::string> command;  // after "--"; command[0] is looked up in PATH
  // Launched through srun (docs/workloads.md): report times on CLOCK_REALTIME, which the
  // controller shares with the node through NTP/PTP, where CLOCK_MONOTONIC is the node's own.
  bool wall_clock = false;
  // > 0: report lines longer than this are framed (workload/slurm/srun_output.h), because srun
  // splits longer lines.
  size_t max_line_bytes = 0;
};

// `--args-hex HEX` alone stands for the arguments it encodes (workload/slurm/srun_step.h).
core::Result<ExecRankCommand> parseExecRankArgs(const std::vector<std::string>& args);
std::string execRankUsage();

// What the command runs with: /usr/bin/env (so that PATH finds the program), the rendezvous
// variables torch.distributed and most launchers read (RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR, MASTER_PORT), FABRIC_CHAOS_HOST_ADDR / FABRIC_CHAOS_IFNAME, the scenario's env,
// then the command with "{script}" replaced by script_path.
std::vector<std::string> execRankArgv(const ExecRankCommand& command,
                                      const std::string& script_path);

}  // namespace fabric_chaos::workload
