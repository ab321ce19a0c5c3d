#include "workload/exec_rank_options.h"

#include <algorithm>

#include "core/command_line.h"
#include "workload/slurm/srun_step.h"
#include "workload/traffic.h"

namespace fabric_chaos::workload {
namespace {

using core::Status;
using core::StatusCode;

constexpr char kScriptPlaceholder[] = "{script}";

}  // namespace

std::string execRankUsage() {
  return "usage: fabric-chaos exec-rank --rank N --world N --master ADDR:PORT [options] -- "
         "COMMAND [ARG...]\n"
         "Runs COMMAND as one rank of an external workload and reports its steps to the agent\n"
         "(docs/workloads.md).\n"
         "  --local-rank N        LOCAL_RANK (0)\n"
         "  --host-addr ADDR      this rank's address in the fabric (FABRIC_CHAOS_HOST_ADDR)\n"
         "  --ifname IF           the interface it is on (FABRIC_CHAOS_IFNAME)\n"
         "  --format F            jsonl | regex | nccl-tests: how stdout reports steps (jsonl)\n"
         "  --pattern P           regex: PCRE2 with named groups, duration_ms|_s|_us required\n"
         "  --placement P         nccl-tests: out-of-place | in-place (out-of-place)\n"
         "  --silence-ms N        no step for this long after the first is a hang (60000; 0 off)\n"
         "  --no-steps            this rank prints no steps: ready at once, never silent\n"
         "  --env NAME=VALUE      extra environment, repeatable\n"
         "  --script NAME         a shipped script (pytorch-ddp) that {script} in COMMAND names\n"
         "  --wall-clock          report times on CLOCK_REALTIME (a rank launched by srun)\n"
         "  --max-line-bytes N    frame report lines longer than N (srun splits long lines)\n"
         "  --args-hex HEX        alone: every argument above, hex-encoded (srun --multi-prog)\n";
}

core::Result<ExecRankCommand> parseExecRankArgs(const std::vector<std::string>& given) {
  std::vector<std::string> args = given;
  if (args.size() == 2 && args[0] == "--args-hex") {
    auto decoded = decodeTaskArgs(args[1]);
    if (!decoded.isOk()) return decoded.status();
    args = std::move(decoded.value());
  }
  const auto dashes = std::find(args.begin(), args.end(), "--");
  ExecRankCommand out;
  if (dashes == args.end() || dashes + 1 == args.end()) {
    return Status(StatusCode::kInvalidArgument, "the command to run goes after \"--\"");
  }
  out.command.assign(dashes + 1, args.end());
  core::FlagRules rules;
  rules.valued = {"rank",   "world",  "local-rank",    "master",    "host-addr",
                  "ifname", "format", "pattern",       "placement", "silence-ms",
                  "env",    "script", "max-line-bytes"};
  rules.boolean = {"no-steps", "wall-clock"};
  auto line = core::parseCommandLine(std::vector<std::string>(args.begin(), dashes), rules);
  if (!line.isOk()) return line.status();
  bool have_rank = false, have_world = false, have_master = false;
  for (const core::ParsedFlag& flag : line.value().flags) {
    const std::string& v = flag.value;
    if (flag.name == "rank" || flag.name == "world" || flag.name == "local-rank") {
      auto n = core::parseFlagInteger("--" + flag.name, v, flag.name == "world" ? 1 : 0, 1 << 20);
      if (!n.isOk()) return n.status();
      const int value = static_cast<int>(n.value());
      if (flag.name == "rank") out.rank.rank = value, have_rank = true;
      if (flag.name == "world") out.rank.world = value, have_world = true;
      if (flag.name == "local-rank") out.local_rank = value;
    } else if (flag.name == "master") {
      FC_RETURN_IF_ERROR(parseAddressPort("--master", v, &out.master_addr, &out.master_port));
      have_master = true;
    } else if (flag.name == "host-addr") {
      out.host_addr = v;
    } else if (flag.name == "ifname") {
      out.ifname = v;
    } else if (flag.name == "format") {
      auto format = parseStepFormat(v);
      if (!format) {
        return Status(StatusCode::kInvalidArgument,
                      "--format must be jsonl, regex or nccl-tests, got \"" + v + "\"");
      }
      out.parser.format = *format;
    } else if (flag.name == "pattern") {
      out.parser.pattern = v;
    } else if (flag.name == "placement") {
      auto placement = parseNcclPlacement(v);
      if (!placement) {
        return Status(StatusCode::kInvalidArgument,
                      "--placement must be out-of-place or in-place, got \"" + v + "\"");
      }
      out.parser.placement = *placement;
    } else if (flag.name == "silence-ms") {
      auto n = core::parseFlagInteger("--silence-ms", v, 0, 86'400'000);
      if (!n.isOk()) return n.status();
      out.rank.silence_ms = n.value();
    } else if (flag.name == "env") {
      const size_t eq = v.find('=');
      if (eq == std::string::npos || !core::isEnvironmentName(v.substr(0, eq))) {
        return Status(
            StatusCode::kInvalidArgument,
            "--env expects NAME=VALUE with NAME of letters, digits and _, got \"" + v + "\"");
      }
      out.env.push_back(v);
    } else if (flag.name == "script") {
      out.script = v;
    } else if (flag.name == "no-steps") {
      out.rank.reports_steps = false;
    } else if (flag.name == "wall-clock") {
      out.wall_clock = true;
    } else if (flag.name == "max-line-bytes") {
      auto n = core::parseFlagInteger("--max-line-bytes", v, 64, 1 << 20);
      if (!n.isOk()) return n.status();
      out.max_line_bytes = static_cast<size_t>(n.value());
    }
  }
  if (!have_rank || !have_world || !have_master) {
    return Status(StatusCode::kInvalidArgument, "--rank, --world and --master are required");
  }
  if (out.rank.rank >= out.rank.world) {
    return Status(StatusCode::kInvalidArgument, "--rank must be below --world");
  }
  const bool names_script =
      std::find(out.command.begin(), out.command.end(), kScriptPlaceholder) != out.command.end();
  if (names_script != !out.script.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "--script and a {script} argument in the command go together");
  }
  if (Status s = checkStepParserSpec(out.parser); !s.isOk()) return s;
  return out;
}

std::vector<std::string> execRankArgv(const ExecRankCommand& command,
                                      const std::string& script_path) {
  std::vector<std::string> argv = {
      "/usr/bin/env",
      "--",
      "RANK=" + std::to_string(command.rank.rank),
      "WORLD_SIZE=" + std::to_string(command.rank.world),
      "LOCAL_RANK=" + std::to_string(command.local_rank),
      "MASTER_ADDR=" + command.master_addr,
      "MASTER_PORT=" + std::to_string(command.master_port),
  };
  if (!command.host_addr.empty()) argv.push_back("FABRIC_CHAOS_HOST_ADDR=" + command.host_addr);
  if (!command.ifname.empty()) argv.push_back("FABRIC_CHAOS_IFNAME=" + command.ifname);
  argv.insert(argv.end(), command.env.begin(), command.env.end());
  for (const std::string& arg : command.command) {
    argv.push_back(arg == kScriptPlaceholder ? script_path : arg);
  }
  return argv;
}

}  // namespace fabric_chaos::workload
