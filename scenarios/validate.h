#pragma once
// Checks a parsed scenario against a fabric and the registered fault kinds. Pure.
//   unknown kind          -> kInvalidArgument listing the valid kinds
//   kind the fabric's agents cannot run -> kUnprocessable saying where and why
//   bad fault parameters  -> kInvalidArgument naming steps[i].params.X
//   target not in fabric  -> kUnprocessable naming the target
//   overlapping faults that cannot compose on one target -> kUnprocessable naming both steps
//                            (scenarios/composition.h)

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "scenarios/model.h"
#include "scenarios/plan.h"
#include "scenarios/topology.h"

namespace fabric_chaos::scenarios {

struct KindCatalog {
  std::vector<std::string> kinds;  // valid kinds, sorted
  std::function<core::Status(const std::string& kind, const nlohmann::json& params)>
      validate_params;
  // Kinds the fabric's agents know but cannot run, with why ("on host h1: sch_netem is not in
  // this kernel"): refused with that reason (kUnprocessable) instead of "unknown fault kind".
  std::map<std::string, std::string> unavailable = {};
  // Whether the agent that will act on one planned fault can run its kind there: a host's NIC is
  // its host's agent's, a lab switch port the controller's (scenarios/engine/fabric_agents.h).
  // kUnprocessable naming the target and that agent's reason. Unset: no per-target check.
  std::function<core::Status(const PlannedAction& action)> check_action = {};
};

// The catalog for one fabric: built from the agents of its hosts (scenarios/engine/
// fabric_agents.h), so a VM-lab scenario is checked against the guests, not the controller.
// An agent that cannot be asked is an error (kUnavailable naming the host), never a fallback.
using KindCatalogFor = std::function<core::Result<KindCatalog>(const Fabric& fabric)>;

core::Status validateForFabric(const Scenario& scenario, const Fabric& fabric,
                               const KindCatalog& catalog);

// The checks of validateForFabric that need no fabric (step kinds, parameters and timing, then
// max_duration_ms), with its messages and order: for a scenario whose fabric is not registered.
core::Status validateKindsAndTiming(const Scenario& scenario, const KindCatalog& catalog);

}  // namespace fabric_chaos::scenarios
