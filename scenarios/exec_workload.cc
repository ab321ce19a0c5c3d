#include "scenarios/exec_workload.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "core/command_line.h"
#include "scenarios/json_fields.h"

namespace fabric_chaos::scenarios {
namespace {

using core::Status;
using json_fields::child;
using json_fields::element;
using json_fields::find;
using json_fields::invalid;
using nlohmann::json;

constexpr size_t kMaxArguments = 256;
constexpr size_t kMaxEnv = 64;

// The variables the rank's launcher sets itself: a scenario that set them would break the
// rendezvous every rank relies on.
bool reservedEnvName(const std::string& name) {
  static constexpr std::string_view kReserved[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK",
                                                   "MASTER_ADDR", "MASTER_PORT"};
  return std::find(std::begin(kReserved), std::end(kReserved), name) != std::end(kReserved) ||
         name.rfind("FABRIC_CHAOS_", 0) == 0;
}

Status readStrings(const json& obj, const std::string& path, std::string_view key, bool required,
                   std::vector<std::string>& out) {
  const json* value = find(obj, key);
  const std::string at = child(path, key);
  if (value == nullptr) {
    return required ? invalid(at, "is required: the program and its arguments") : Status::ok();
  }
  if (!value->is_array() || value->size() > kMaxArguments) {
    return invalid(at, "must be an array of at most " + std::to_string(kMaxArguments) + " strings");
  }
  if (required && value->empty()) return invalid(at, "must name a program");
  for (size_t i = 0; i < value->size(); ++i) {
    const json& arg = (*value)[i];
    if (!arg.is_string()) return invalid(element(at, i), "must be a string");
    const std::string text = arg.get<std::string>();
    if (text.find('\0') != std::string::npos) return invalid(element(at, i), "has a NUL byte");
    out.push_back(text);
  }
  if (required && out.front().empty()) return invalid(element(at, 0), "must name a program");
  if (required && out.front().find('=') != std::string::npos) {
    // env(1) starts the program, and would read NAME=VALUE as one more variable.
    return invalid(element(at, 0), "a program name cannot contain '='");
  }
  return Status::ok();
}

Status readInteger(const json& obj, const std::string& path, std::string_view key, int64_t lo,
                   int64_t hi, int64_t& out) {
  const json* value = find(obj, key);
  if (value == nullptr) return Status::ok();
  const std::string expected =
      "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (!value->is_number_integer()) return invalid(child(path, key), expected);
  if (value->get<int64_t>() < lo || value->get<int64_t>() > hi) {
    return json_fields::unacceptable(child(path, key), expected);
  }
  out = value->get<int64_t>();
  return Status::ok();
}

Status readParser(const json& obj, const std::string& path, workload::StepParserSpec& out) {
  const json* parser = find(obj, "parser");
  const std::string at = child(path, "parser");
  if (parser == nullptr) return Status::ok();  // JSON lines
  FC_RETURN_IF_ERROR(json_fields::checkObject(*parser, at, {"format", "pattern", "placement"}));
  if (const json* format = find(*parser, "format")) {
    const auto parsed =
        format->is_string() ? workload::parseStepFormat(format->get<std::string>()) : std::nullopt;
    if (!parsed)
      return invalid(child(at, "format"), "must be \"jsonl\", \"regex\" or \"nccl-tests\"");
    out.format = *parsed;
  }
  FC_RETURN_IF_ERROR(json_fields::readString(*parser, at, "pattern", out.pattern));
  if (const json* placement = find(*parser, "placement")) {
    const auto parsed = placement->is_string()
                            ? workload::parseNcclPlacement(placement->get<std::string>())
                            : std::nullopt;
    if (!parsed || out.format != workload::StepFormat::kNcclTests) {
      return invalid(child(at, "placement"),
                     "is for the nccl-tests format: \"out-of-place\" or \"in-place\"");
    }
    out.placement = *parsed;
  }
  if (Status s = workload::checkStepParserSpec(out); !s.isOk()) return invalid(at, s.message());
  return Status::ok();
}

}  // namespace

std::string_view workloadKindName(WorkloadKind kind) {
  switch (kind) {
    case WorkloadKind::kRing:
      return "ring";
    case WorkloadKind::kExec:
      return "exec";
    case WorkloadKind::kPytorchDdp:
      return "pytorch-ddp";
  }
  return "ring";
}

std::optional<WorkloadKind> parseWorkloadKind(std::string_view name) {
  for (WorkloadKind k : {WorkloadKind::kRing, WorkloadKind::kExec, WorkloadKind::kPytorchDdp}) {
    if (workloadKindName(k) == name) return k;
  }
  return std::nullopt;
}

Status parseExecWorkload(const json& obj, const std::string& path, WorkloadKind kind,
                         ExecWorkloadSpec& out) {
  if (kind == WorkloadKind::kExec) {
    if (find(obj, "args") != nullptr || find(obj, "python") != nullptr) {
      return invalid(child(path, find(obj, "args") != nullptr ? "args" : "python"),
                     "is for pytorch-ddp; an exec workload gives its whole command");
    }
    FC_RETURN_IF_ERROR(readStrings(obj, path, "command", /*required=*/true, out.command));
    FC_RETURN_IF_ERROR(readParser(obj, path, out.parser));
  } else {
    if (find(obj, "command") != nullptr || find(obj, "parser") != nullptr) {
      return invalid(child(path, find(obj, "command") != nullptr ? "command" : "parser"),
                     "is for exec; pytorch-ddp runs its shipped script and reads its JSON lines "
                     "(give the script's extra arguments as args)");
    }
    FC_RETURN_IF_ERROR(readStrings(obj, path, "args", /*required=*/false, out.command));
    FC_RETURN_IF_ERROR(json_fields::readString(obj, path, "python", out.python));
    if (out.python.empty() || out.python.front() != '/') {
      return invalid(child(path, "python"), "must be an absolute path");
    }
  }
  if (const json* env = find(obj, "env")) {
    const std::string at = child(path, "env");
    if (!env->is_object() || env->size() > kMaxEnv) {
      return invalid(
          at, "must be an object of at most " + std::to_string(kMaxEnv) + " NAME: \"value\" pairs");
    }
    for (const auto& [name, value] : env->items()) {
      if (!core::isEnvironmentName(name)) return invalid(child(at, name), "is not a variable name");
      if (reservedEnvName(name)) {
        return invalid(child(at, name), "is set by fabric-chaos for every rank");
      }
      if (!value.is_string()) return invalid(child(at, name), "must be a string");
      out.env[name] = value.get<std::string>();
    }
  }
  int64_t port = out.master_port;
  FC_RETURN_IF_ERROR(readInteger(obj, path, "master_port", 1024, 65535, port));
  out.master_port = static_cast<int>(port);
  FC_RETURN_IF_ERROR(readInteger(obj, path, "silence_ms", 0, 3'600'000, out.silence_ms));
  FC_RETURN_IF_ERROR(
      readInteger(obj, path, "start_timeout_ms", 1000, 3'600'000, out.start_timeout_ms));
  if (const json* from = find(obj, "samples_from")) {
    if (!from->is_string() || (*from != "every_rank" && *from != "rank0")) {
      return invalid(child(path, "samples_from"), "must be \"every_rank\" or \"rank0\"");
    }
    out.every_rank_reports = *from == "every_rank";
  }
  return parseWorkloadLauncher(obj, path, out.launcher, out.slurm);
}

json execWorkloadJson(WorkloadKind kind, const ExecWorkloadSpec& spec) {
  json doc = {{"env", spec.env},
              {"master_port", spec.master_port},
              {"silence_ms", spec.silence_ms},
              {"start_timeout_ms", spec.start_timeout_ms},
              {"samples_from", spec.every_rank_reports ? "every_rank" : "rank0"}};
  if (kind == WorkloadKind::kExec) {
    doc["command"] = spec.command;
    json parser = {{"format", workload::stepFormatName(spec.parser.format)}};
    if (!spec.parser.pattern.empty()) parser["pattern"] = spec.parser.pattern;
    if (spec.parser.format == workload::StepFormat::kNcclTests) {
      parser["placement"] = workload::ncclPlacementName(spec.parser.placement);
    }
    doc["parser"] = parser;
  } else {
    doc["args"] = spec.command;
    doc["python"] = spec.python;
  }
  addWorkloadLauncherJson(spec.launcher, spec.slurm, doc);
  return doc;
}

}  // namespace fabric_chaos::scenarios
