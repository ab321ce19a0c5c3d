#include "agent/exec_rank_args.h"

#include "workload/steps/step_parser.h"

namespace fabric_chaos::agent {

// The verbs fault library goes to the command's environment, not the wrapper's: the program under
// test is the one that uses verbs.
std::vector<std::string> execRankArguments(const RankSpec& spec, const VerbsShimLoad& shim,
                                           const ExecRankReporting& reporting) {
  const ExecRankSpec& exec = spec.exec;
  std::vector<std::string> args = {
      "--rank",       std::to_string(spec.rank),
      "--world",      std::to_string(spec.world),
      "--master",     exec.master_addr + ":" + std::to_string(exec.master_port),
      "--format",     std::string(workload::stepFormatName(exec.parser.format)),
      "--silence-ms", std::to_string(exec.silence_ms)};
  if (!spec.listen_addr.empty()) args.insert(args.end(), {"--host-addr", spec.listen_addr});
  if (!exec.ifname.empty()) args.insert(args.end(), {"--ifname", exec.ifname});
  if (!exec.parser.pattern.empty()) args.insert(args.end(), {"--pattern", exec.parser.pattern});
  if (exec.parser.format == workload::StepFormat::kNcclTests) {
    args.insert(args.end(),
                {"--placement", std::string(workload::ncclPlacementName(exec.parser.placement))});
  }
  if (!exec.reports_steps) args.push_back("--no-steps");
  if (!exec.script.empty()) args.insert(args.end(), {"--script", exec.script});
  for (const std::string& variable : exec.env) args.insert(args.end(), {"--env", variable});
  if (spec.verbs_shim) {
    args.insert(args.end(), {"--env", "LD_PRELOAD=" + shim.library, "--env",
                             "FABRIC_CHAOS_VERBS_DIR=" + shim.dir, "--env",
                             "FABRIC_CHAOS_RANK=" + std::to_string(spec.rank)});
  }
  if (reporting.wall_clock) args.push_back("--wall-clock");
  if (reporting.max_line_bytes > 0) {
    args.insert(args.end(), {"--max-line-bytes", std::to_string(reporting.max_line_bytes)});
  }
  args.push_back("--");
  args.insert(args.end(), exec.command.begin(), exec.command.end());
  return args;
}

}  // namespace fabric_chaos::agent
