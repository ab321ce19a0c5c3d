#pragma once
// One run's ranks as one Slurm job step (docs/workloads.md, "Through Slurm"): the srun command
// line, its --multi-prog file (one line per task) and its SLURM_HOSTFILE (task i on the node of
// rank i, with --distribution=arbitrary), and the scancel commands that signal or end the step.
// Pure; any thread.
//
// A task's arguments travel hex-encoded inside its multi-prog line: srun's multi-prog parser
// treats quotes, backslashes and '%' specially, and a step pattern or a command may hold any of
// them. Hex needs no shared file between the controller and the nodes.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::workload {

// What `srun --label` prints before every line of task N is "N: ", padded to the widest task
// number; longer lines it splits at 1024 bytes. Report lines framed at this size stay whole.
inline constexpr size_t kSrunLineBytes = 1000;

struct SrunTask {
  std::string node;               // the Slurm node it runs on
  std::string program;            // fabric-chaos on the node
  std::string subcommand;         // "exec-rank": it reads "--args-hex HEX" as its arguments
  std::vector<std::string> args;  // the subcommand's: "--rank", "0", ...
};

struct SrunStepSpec {
  std::string job_name;         // scancel --name finds the step by it: unique per run
  std::vector<SrunTask> tasks;  // task i is rank i
  std::string partition;        // "" = the cluster's default
  std::string reservation;      // "" = none
  // After the first task ends, srun ends the others this many seconds later (--wait): a node cut
  // off by a fault may never report its task's end, and srun would wait for it forever.
  int wait_s = 30;
  std::vector<std::string> extra_args;  // the scenario's own srun options, before --multi-prog
  std::string multi_prog_path;          // where the caller writes multi_prog
};

struct SrunStep {
  std::vector<std::string> argv;  // srun ... --multi-prog <multi_prog_path>
  std::string multi_prog;         // the file's text
  std::string hostfile;           // SLURM_HOSTFILE's text: one node per task, in task order
};

// kInvalidArgument for no task, a node name or program srun would misread, or extra args that
// take over what the step needs (--ntasks, --nodelist, --multi-prog ...), naming the argument.
core::Result<SrunStep> buildSrunStep(const SrunStepSpec& spec);

// The value of "--args-hex", which carries a task's arguments through its multi-prog line, and
// back.
std::string encodeTaskArgs(const std::vector<std::string>& args);
core::Result<std::vector<std::string>> decodeTaskArgs(std::string_view hex);

// scancel for the job of that name: with a signal (SIGTERM to every task: they finish and
// report), or without one (cancel the job).
std::vector<std::string> scancelArgv(const std::string& job_name,
                                     std::optional<std::string> signal_name);

}  // namespace fabric_chaos::workload
