#pragma once
// What the API layer needs from the engine and the lab, as narrow interfaces so that handlers are
// tested with fakes. Implementations are thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/telemetry.h"
#include "scenarios/model.h"
#include "scenarios/topology.h"

namespace fabric_chaos::scenarios {

class FabricCatalog {
 public:
  virtual ~FabricCatalog() = default;
  virtual std::vector<Fabric> list() = 0;
  virtual core::Result<Fabric> get(const std::string& name) = 0;  // kNotFound
  // A number that changes whenever list() would answer differently, cheaper to ask than list():
  // what lets the embedded agent's guard keep its allowlist between fault applies. nullopt: this
  // catalog cannot tell, so ask list() every time.
  virtual std::optional<uint64_t> version() { return std::nullopt; }
};

// Reads the counters of a switch's modelled egress queues (lab/switch_telemetry.h): what a run
// samples every 100 ms as its switch telemetry. Points come without t_ms; the caller stamps them.
class SwitchTelemetry {
 public:
  virtual ~SwitchTelemetry() = default;
  virtual core::Result<std::vector<core::TelemetryPoint>> read(const Switch& sw) = 0;
};

class RunService {
 public:
  virtual ~RunService() = default;
  // Stores the run as queued and returns its id at once; the run executes in the background.
  // The scenario must already be validated against the fabric.
  virtual core::Result<int64_t> submit(const Scenario& scenario, const std::string& fabric) = 0;
  // Reverts everything at once and marks the run aborted. kNotFound, kFailedPrecondition when the
  // run has already finished.
  virtual core::Status abort(int64_t run_id) = 0;
};

// The operator's hand on faults in force (GET /v1/faults reads the journal; this reverts one).
class FaultService {
 public:
  virtual ~FaultService() = default;
  // Reverts journal entry `journal_id` now through the agent that applied it, with the state it
  // captured, and marks it reverted. kNotFound when no unreverted entry has that id;
  // kFailedPrecondition when a running run owns it (aborting that run reverts all its faults);
  // the agent's error when the revert fails (the entry stays, as it was).
  virtual core::Status revertNow(int64_t journal_id) = 0;
  // Journal entries whose run is executing right now (their faults come off when it ends).
  virtual bool ownedByRunningRun(int64_t run_id) = 0;
};

// Runs suites: one scenario after the other, with one verdict (docs/api.md, "Suites").
class SuiteService {
 public:
  virtual ~SuiteService() = default;
  // Stores the suite run as queued and returns its id; it executes in the background. The suite
  // document must already be validated (every scenario exists).
  virtual core::Result<int64_t> submitSuite(const std::string& suite_name,
                                            const nlohmann::json& suite,
                                            const std::string& fabric) = 0;
  // Aborts the current run of the suite and skips the rest. kNotFound, kFailedPrecondition.
  virtual core::Status abortSuite(int64_t suite_run_id) = 0;
};

}  // namespace fabric_chaos::scenarios
