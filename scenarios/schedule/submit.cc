#include "scenarios/schedule/submit.h"

#include "scenarios/model.h"

namespace fabric_chaos::scenarios::schedule {

using core::Result;
using core::Status;
using core::StatusCode;

Result<int64_t> submitStoredScenario(const SubmitDeps& deps, const std::string& name,
                                     const std::string& fabric) {
  const std::string what = "scenario " + name;
  auto record = deps.store->getScenario(name);
  if (!record.isOk()) {
    // The store's own message already names the scenario.
    if (record.status().code() == StatusCode::kNotFound) return record.status();
    return record.status().withContext(what);
  }
  auto scenario = parseScenario(record->document);
  if (!scenario.isOk()) return scenario.status().withContext(what);
  std::string fabric_name = fabric;
  if (fabric_name.empty()) fabric_name = scenario->fabric;
  if (fabric_name.empty()) fabric_name = deps.default_fabric;
  if (deps.fabrics == nullptr) {
    return Status(StatusCode::kUnprocessable,
                  what + ": fabric " + fabric_name + " is not registered");
  }
  auto fabric_record = deps.fabrics->get(fabric_name);
  if (!fabric_record.isOk()) {
    if (fabric_record.status().code() == StatusCode::kNotFound) {
      return Status(StatusCode::kUnprocessable,
                    what + ": fabric " + fabric_name + " is not registered");
    }
    return fabric_record.status().withContext(what);
  }
  core::Result<KindCatalog> catalog = deps.kinds ? deps.kinds(*fabric_record) : KindCatalog{};
  if (!catalog.isOk()) return catalog.status().withContext(what);
  if (Status st = validateForFabric(*scenario, *fabric_record, *catalog); !st.isOk()) {
    return st.withContext(what);
  }
  auto run = deps.runs->submit(*scenario, fabric_name);
  if (!run.isOk()) return run.status().withContext(what + ": cannot start a run");
  return run;
}

}  // namespace fabric_chaos::scenarios::schedule
