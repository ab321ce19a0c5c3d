#include "scenarios/workload_launcher.h"

#include <algorithm>
#include <cctype>

#include "scenarios/json_fields.h"

namespace fabric_chaos::scenarios {
namespace {

using core::Status;
using json_fields::child;
using json_fields::element;
using json_fields::find;
using json_fields::invalid;
using nlohmann::json;

constexpr size_t kMaxSrunArgs = 32;

bool slurmName(const std::string& name) {
  return !name.empty() && name.size() <= 255 && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
  });
}

}  // namespace

std::string_view workloadLauncherName(WorkloadLauncher launcher) {
  return launcher == WorkloadLauncher::kSlurm ? "slurm" : "agents";
}

Status parseWorkloadLauncher(const json& obj, const std::string& path, WorkloadLauncher& launcher,
                             SlurmLaunchSpec& slurm) {
  if (const json* value = find(obj, "launcher")) {
    if (!value->is_string() || (*value != "agents" && *value != "slurm")) {
      return invalid(child(path, "launcher"), "must be \"agents\" or \"slurm\"");
    }
    launcher = *value == "slurm" ? WorkloadLauncher::kSlurm : WorkloadLauncher::kAgents;
  }
  const json* options = find(obj, "slurm");
  if (options == nullptr) return Status::ok();
  const std::string at = child(path, "slurm");
  if (launcher != WorkloadLauncher::kSlurm) {
    return invalid(at, "goes with \"launcher\": \"slurm\"");
  }
  FC_RETURN_IF_ERROR(
      json_fields::checkObject(*options, at, {"partition", "reservation", "wait_s", "srun_args"}));
  for (auto [key, field] :
       {std::pair{"partition", &slurm.partition}, std::pair{"reservation", &slurm.reservation}}) {
    FC_RETURN_IF_ERROR(json_fields::readString(*options, at, key, *field));
    if (!field->empty() && !slurmName(*field)) {
      return invalid(child(at, key), "is not a Slurm name (letters, digits, '-', '_', '.')");
    }
  }
  if (const json* wait = find(*options, "wait_s")) {
    const std::string expected = "must be an integer in [1, 3600]";
    if (!wait->is_number_integer()) return invalid(child(at, "wait_s"), expected);
    if (wait->get<int64_t>() < 1 || wait->get<int64_t>() > 3600) {
      return json_fields::unacceptable(child(at, "wait_s"), expected);
    }
    slurm.wait_s = wait->get<int>();
  }
  if (const json* args = find(*options, "srun_args")) {
    const std::string args_at = child(at, "srun_args");
    if (!args->is_array() || args->size() > kMaxSrunArgs) {
      return invalid(args_at,
                     "must be an array of at most " + std::to_string(kMaxSrunArgs) + " strings");
    }
    for (size_t i = 0; i < args->size(); ++i) {
      const json& arg = (*args)[i];
      if (!arg.is_string() || arg.get<std::string>().rfind("-", 0) != 0) {
        return invalid(element(args_at, i), "must be an srun option (\"--account=ops\")");
      }
      slurm.srun_args.push_back(arg.get<std::string>());
    }
  }
  return Status::ok();
}

void addWorkloadLauncherJson(WorkloadLauncher launcher, const SlurmLaunchSpec& slurm,
                             json& workload) {
  if (launcher == WorkloadLauncher::kAgents) return;
  workload["launcher"] = workloadLauncherName(launcher);
  json options = {{"wait_s", slurm.wait_s}, {"srun_args", slurm.srun_args}};
  if (!slurm.partition.empty()) options["partition"] = slurm.partition;
  if (!slurm.reservation.empty()) options["reservation"] = slurm.reservation;
  workload["slurm"] = std::move(options);
}

}  // namespace fabric_chaos::scenarios
