#include "scenarios/validate.h"

#include <algorithm>
#include <set>
#include <utility>

#include "scenarios/composition.h"
#include "scenarios/plan.h"
#include "scenarios/step_targets.h"

namespace fabric_chaos::scenarios {
namespace {

using core::Status;
using core::StatusCode;

std::string joinKinds(const std::vector<std::string>& kinds) {
  std::string out;
  for (const std::string& kind : kinds) {
    if (!out.empty()) out += ", ";
    out += kind;
  }
  return out.empty() ? "(none registered)" : out;
}

Status validateWorkload(const WorkloadSpec& workload, const Fabric& fabric) {
  for (size_t i = 0; i < workload.hosts.size(); ++i) {
    if (fabric.findHost(workload.hosts[i]) == nullptr) {
      return Status(StatusCode::kUnprocessable, "workload.hosts[" + std::to_string(i) + "]: host " +
                                                    workload.hosts[i] + " is not in fabric " +
                                                    fabric.name);
    }
  }
  if (workload.hosts.empty() && fabric.hosts.size() < 2) {
    return Status(StatusCode::kUnprocessable,
                  "workload.hosts: the workload needs at least 2 hosts; fabric " + fabric.name +
                      " has " + std::to_string(fabric.hosts.size()));
  }
  if (workload.kind != WorkloadKind::kRing && workload.exec.launcher == WorkloadLauncher::kSlurm &&
      !fabric.slurm) {
    return Status(StatusCode::kUnprocessable,
                  "workload.launcher: fabric " + fabric.name +
                      " has no Slurm cluster to launch through (its description has no \"slurm\" "
                      "object: `lab up --with-slurm`, or docs/workloads.md for a real cluster)");
  }
  if (!workload.hosts.empty() && workload.hosts.size() < 2) {
    return Status(StatusCode::kUnprocessable,
                  "workload.hosts: the workload needs at least 2 hosts; " +
                      std::to_string(workload.hosts.size()) + " listed");
  }
  return Status::ok();
}

Status validateStep(const FaultStep& step, int index, const Fabric* fabric,
                    const KindCatalog& catalog, const std::vector<std::string>& workload_hosts) {
  const std::string prefix = "steps[" + std::to_string(index) + "]";
  if (std::find(catalog.kinds.begin(), catalog.kinds.end(), step.kind) == catalog.kinds.end()) {
    if (auto why = catalog.unavailable.find(step.kind); why != catalog.unavailable.end()) {
      return Status(StatusCode::kUnprocessable,
                    prefix + ".kind: fault kind " + step.kind + " is not available " + why->second);
    }
    return Status(StatusCode::kInvalidArgument, prefix + ".kind: unknown fault kind \"" +
                                                    step.kind +
                                                    "\"; valid kinds: " + joinKinds(catalog.kinds));
  }
  if (catalog.validate_params) {
    FC_RETURN_IF_ERROR(
        catalog.validate_params(step.kind, step.params).withContext(prefix + ".params"));
  }
  auto phases = stepPhases(step, index);
  if (!phases.isOk()) return phases.status();
  if (fabric == nullptr) return Status::ok();
  auto targets = resolveStepTargets(step, *fabric, workload_hosts);
  if (!targets.isOk()) return targets.status().withContext(prefix + ".target");
  return Status::ok();
}

// Every check, in one order, so that a document with several faults reports the same first one
// whether or not a fabric is known; the fabric checks are skipped when `fabric` is null.
Status validate(const Scenario& scenario, const Fabric* fabric, const KindCatalog& catalog) {
  if (fabric != nullptr) FC_RETURN_IF_ERROR(validateWorkload(scenario.workload, *fabric));
  for (size_t i = 0; i < scenario.steps.size(); ++i) {
    FC_RETURN_IF_ERROR(validateStep(scenario.steps[i], static_cast<int>(i), fabric, catalog,
                                    scenario.workload.hosts));
  }
  if (fabric != nullptr) {
    auto plan = planFaults(scenario, *fabric);
    if (!plan.isOk()) return plan.status();
    if (catalog.check_action) {
      // A 100-phase flap plans 200 actions on one target: each (kind, target) is asked once.
      std::set<std::pair<std::string, std::string>> checked;
      for (const PlannedAction& action : *plan) {
        if (!checked.emplace(action.kind, targetKey(action.target)).second) continue;
        FC_RETURN_IF_ERROR(catalog.check_action(action).withContext(
            "steps[" + std::to_string(action.step) + "].target"));
      }
    }
    FC_RETURN_IF_ERROR(checkComposition(*plan));
  }
  const int64_t planned = scenario.plannedDurationMs();
  if (planned > scenario.max_duration_ms) {
    return Status(StatusCode::kUnprocessable,
                  "max_duration_ms: the scenario needs " + std::to_string(planned) +
                      " ms (baseline + fault steps + recovery), more than max_duration_ms " +
                      std::to_string(scenario.max_duration_ms));
  }
  return Status::ok();
}

}  // namespace

core::Status validateKindsAndTiming(const Scenario& scenario, const KindCatalog& catalog) {
  return validate(scenario, nullptr, catalog);
}

core::Status validateForFabric(const Scenario& scenario, const Fabric& fabric,
                               const KindCatalog& catalog) {
  return validate(scenario, &fabric, catalog);
}

}  // namespace fabric_chaos::scenarios
