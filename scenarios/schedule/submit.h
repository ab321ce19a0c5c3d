#pragma once
// Starting a stored scenario by name, as the suite runner and the cron scheduler both do: load it
// from the store, resolve its fabric, validate it against that fabric and submit it to the
// engine. Every error names the scenario ("scenario link-flap: fabric x is not registered").
// Thread-safe as its dependencies are.

#include <cstdint>
#include <functional>
#include <string>

#include "core/status.h"
#include "scenarios/services.h"
#include "scenarios/validate.h"
#include "store/store.h"

namespace fabric_chaos::scenarios::schedule {

struct SubmitDeps {
  store::Store* store = nullptr;
  RunService* runs = nullptr;
  FabricCatalog* fabrics = nullptr;
  KindCatalogFor kinds;  // the fabric's agents' kinds (scenarios/engine/fabric_agents.h)
  // For a scenario with no fabric of its own when the caller names none.
  std::string default_fabric = "netns-lab";
};

// The fabric is `fabric`, else the scenario's own, else deps.default_fabric. Returns the run id.
core::Result<int64_t> submitStoredScenario(const SubmitDeps& deps, const std::string& name,
                                           const std::string& fabric);

}  // namespace fabric_chaos::scenarios::schedule
