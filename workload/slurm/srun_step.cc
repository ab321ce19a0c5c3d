#include "workload/slurm/srun_step.h"

#include <algorithm>
#include <cctype>

namespace fabric_chaos::workload {
namespace {

using core::Status;
using core::StatusCode;

Status invalid(const std::string& message) { return Status(StatusCode::kInvalidArgument, message); }

// What srun's multi-prog parser and a hostfile take as one word with no special meaning.
bool plainWord(const std::string& word) {
  return !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.' ||
           c == '/' || c == '+';
  });
}

// Options the step sets itself: a scenario's srun_args may not change where or what runs.
bool reservedOption(const std::string& arg) {
  static const char* const kReserved[] = {"--ntasks",
                                          "-n",
                                          "--nodes",
                                          "-N",
                                          "--nodelist",
                                          "-w",
                                          "--distribution",
                                          "-m",
                                          "--multi-prog",
                                          "--label",
                                          "-l",
                                          "--job-name",
                                          "-J",
                                          "--wait",
                                          "-W",
                                          "--partition",
                                          "-p",
                                          "--reservation",
                                          "--ntasks-per-node",
                                          "--output",
                                          "-o",
                                          "--error",
                                          "-e",
                                          "--input",
                                          "-i",
                                          "--unbuffered",
                                          "-u",
                                          "--pty",
                                          "--jobid"};
  const std::string name = arg.substr(0, arg.find('='));
  for (const char* reserved : kReserved) {
    if (name == reserved) return true;
    // "-n4": a short option with its value attached.
    if (reserved[1] != '-' && name.size() > 2 && name.compare(0, 2, reserved) == 0) return true;
  }
  return false;
}

}  // namespace

std::string encodeTaskArgs(const std::vector<std::string>& args) {
  static const char kDigits[] = "0123456789abcdef";
  std::string joined;
  for (const std::string& arg : args) {
    joined += arg;
    joined.push_back('\0');
  }
  std::string hex;
  hex.reserve(joined.size() * 2);
  for (unsigned char c : joined) {
    hex.push_back(kDigits[c >> 4]);
    hex.push_back(kDigits[c & 0xf]);
  }
  return hex;
}

core::Result<std::vector<std::string>> decodeTaskArgs(std::string_view hex) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  if (hex.size() % 2 != 0) return invalid("--args-hex: an odd number of hex digits");
  std::vector<std::string> args;
  std::string arg;
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int high = nibble(hex[i]);
    const int low = nibble(hex[i + 1]);
    if (high < 0 || low < 0) return invalid("--args-hex: not lower-case hex");
    const char c = static_cast<char>((high << 4) | low);
    if (c == '\0') {
      args.push_back(std::move(arg));
      arg.clear();
    } else {
      arg.push_back(c);
    }
  }
  if (!arg.empty()) return invalid("--args-hex: the last argument is not terminated");
  return args;
}

core::Result<SrunStep> buildSrunStep(const SrunStepSpec& spec) {
  if (spec.tasks.empty()) return invalid("a Slurm job step needs at least one task");
  if (!plainWord(spec.job_name)) {
    return invalid("the job name \"" + spec.job_name + "\" must be letters, digits, - _ . only");
  }
  if (!plainWord(spec.multi_prog_path) || spec.multi_prog_path.front() != '/') {
    return invalid("the multi-prog file needs an absolute path of plain characters, got \"" +
                   spec.multi_prog_path + "\"");
  }
  if (spec.wait_s < 1) return invalid("srun --wait must be at least 1 s");
  for (const std::string* name : {&spec.partition, &spec.reservation}) {
    if (!name->empty() && !plainWord(*name)) {
      return invalid("\"" + *name + "\" is not a Slurm partition or reservation name");
    }
  }
  for (const std::string& arg : spec.extra_args) {
    if (reservedOption(arg)) {
      return invalid("srun_args may not set " + arg.substr(0, arg.find('=')) +
                     ": the step sets it to run rank i on the node of rank i");
    }
  }
  SrunStep step;
  const std::string count = std::to_string(spec.tasks.size());
  step.argv = {"srun",
               "--job-name=" + spec.job_name,
               "--ntasks=" + count,
               "--ntasks-per-node=1",
               "--distribution=arbitrary",
               "--label",
               "--wait=" + std::to_string(spec.wait_s),
               "--kill-on-bad-exit=0"};
  if (!spec.partition.empty()) step.argv.push_back("--partition=" + spec.partition);
  if (!spec.reservation.empty()) step.argv.push_back("--reservation=" + spec.reservation);
  step.argv.insert(step.argv.end(), spec.extra_args.begin(), spec.extra_args.end());
  step.argv.insert(step.argv.end(), {"--multi-prog", spec.multi_prog_path});
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    const SrunTask& task = spec.tasks[i];
    if (!plainWord(task.node)) {
      return invalid("task " + std::to_string(i) + ": \"" + task.node +
                     "\" is not a Slurm node name");
    }
    if (!plainWord(task.program) || task.program.front() != '/') {
      return invalid("task " + std::to_string(i) + ": the program must be an absolute path of " +
                     "plain characters, got \"" + task.program + "\"");
    }
    if (!plainWord(task.subcommand)) {
      return invalid("task " + std::to_string(i) + ": \"" + task.subcommand +
                     "\" is not a subcommand");
    }
    step.multi_prog += std::to_string(i) + " " + task.program + " " + task.subcommand +
                       " --args-hex " + encodeTaskArgs(task.args) + "\n";
    step.hostfile += task.node + "\n";
  }
  return step;
}

std::vector<std::string> scancelArgv(const std::string& job_name,
                                     std::optional<std::string> signal_name) {
  std::vector<std::string> argv = {"scancel", "--name=" + job_name};
  if (signal_name) argv.push_back("--signal=" + *signal_name);
  return argv;
}

}  // namespace fabric_chaos::workload
