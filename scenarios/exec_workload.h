#pragma once
// External workloads in a scenario (docs/workloads.md): `exec`, a command per rank whose output
// reads as steps, and `pytorch-ddp`, the shipped DDP script run that way. The JSON codec of their
// fields lives here so that the ring's fields and theirs cannot mix. Pure; any thread.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "scenarios/workload_launcher.h"
#include "workload/steps/step_parser.h"

namespace fabric_chaos::scenarios {

// What a run's ranks run. In JSON: workload.kind "ring" (the default), "exec", "pytorch-ddp".
enum class WorkloadKind { kRing, kExec, kPytorchDdp };
std::string_view workloadKindName(WorkloadKind kind);
std::optional<WorkloadKind> parseWorkloadKind(std::string_view name);

struct ExecWorkloadSpec {
  // exec: the program and its arguments (the program is looked up in PATH on the rank's host);
  // pytorch-ddp: arguments added to the script's (--timeout-s 20, --hidden 2048 ...).
  std::vector<std::string> command;
  std::map<std::string, std::string> env;   // added to the rank's environment
  workload::StepParserSpec parser;          // pytorch-ddp: JSON lines, always
  int master_port = 29500;                  // MASTER_PORT; MASTER_ADDR is rank 0's address
  int64_t silence_ms = 60000;               // no step for this long is a hang (0: not watched)
  int64_t start_timeout_ms = 120000;        // every rank's first step within this of the start
  bool every_rank_reports = true;           // false: only rank 0 prints steps ("samples_from")
  std::string python = "/usr/bin/python3";  // pytorch-ddp: the interpreter with torch
  WorkloadLauncher launcher = WorkloadLauncher::kAgents;
  SlurmLaunchSpec slurm;  // launcher kSlurm only
};

// Reads `obj` (the workload object at `path`, whose keys the caller checked) for an exec kind;
// kInvalidArgument naming the field.
core::Status parseExecWorkload(const nlohmann::json& obj, const std::string& path,
                               WorkloadKind kind, ExecWorkloadSpec& out);
// The fields parseExecWorkload reads, for toJson(Scenario).
nlohmann::json execWorkloadJson(WorkloadKind kind, const ExecWorkloadSpec& spec);

}  // namespace fabric_chaos::scenarios
