#pragma once
// Checks a parsed scenario against a fabric and the registered fault kinds. Pure.
//   unknown kind          -> kInvalidArgument listing the valid kinds
//   bad fault parameters  -> kInvalidArgument naming steps[i].params.X
//   target not in fabric  -> kUnprocessable naming the target

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "scenarios/model.h"
#include "scenarios/topology.h"

namespace fabric_chaos::scenarios {

struct KindCatalog {
  std::vector<std::string> kinds;  // valid kinds, sorted
  std::function<core::Status(const std::string& kind, const nlohmann::json& params)>
      validate_params;
};

core::Status validateForFabric(const Scenario& scenario, const Fabric& fabric,
                               const KindCatalog& catalog);

// The checks of validateForFabric that need no fabric (step kinds, parameters and timing, then
// max_duration_ms), with its messages and order: for a scenario whose fabric is not registered.
core::Status validateKindsAndTiming(const Scenario& scenario, const KindCatalog& catalog);

}  // namespace fabric_chaos::scenarios
