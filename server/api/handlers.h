#pragma once
// The /v1 route handlers behind Api::handle (internal to server/api). Each one is a function of
// the dependencies and the decoded request; failures are returned as error Responses, never thrown
// (Api::handle still turns a stray exception into a 500).

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "scenarios/model.h"
#include "scenarios/validate.h"
#include "server/api/api.h"

namespace fabric_chaos::api::internal {

// Who is calling, as established by Api::handle before dispatch.
struct Caller {
  std::string name = "anonymous";
  store::Role role = store::Role::kViewer;
  int64_t token_id = 0;  // 0 = no token (auth disabled)
};

struct Context {
  const ApiDeps& deps;
  // Serializes scenario create/replace/delete so that "409 if it exists" is not a race between
  // two requests for the same name.
  std::mutex& scenario_mu;
  Caller caller;
};

struct Call {
  const Request& request;
  std::vector<std::string> params;  // captured path segments (":name", ":id"), decoded
  std::map<std::string, std::string> query;
};

using Handler = Response (*)(Context& ctx, const Call& call);

// System: /healthz, /metrics, /v1/capabilities, /v1/fabrics[/NAME].
Response getHealth(Context& ctx, const Call& call);
Response getMetrics(Context& ctx, const Call& call);
Response getCapabilities(Context& ctx, const Call& call);
Response listFabrics(Context& ctx, const Call& call);
Response getFabric(Context& ctx, const Call& call);
// GET /v1/openapi.json (openapi_handlers.cc): the embedded OpenAPI document.
Response getOpenApi(Context& ctx, const Call& call);

// Scenarios: /v1/scenarios[/NAME].
Response listScenarios(Context& ctx, const Call& call);
Response getScenario(Context& ctx, const Call& call);
Response createScenario(Context& ctx, const Call& call);
Response replaceScenario(Context& ctx, const Call& call);
Response deleteScenario(Context& ctx, const Call& call);

// Runs: /v1/runs[/ID[/abort|/samples|/events|/telemetry]].
Response listRuns(Context& ctx, const Call& call);
Response createRun(Context& ctx, const Call& call);
Response getRun(Context& ctx, const Call& call);
Response abortRun(Context& ctx, const Call& call);
Response getRunSamples(Context& ctx, const Call& call);
Response getRunEvents(Context& ctx, const Call& call);
// GET /v1/runs/ID/telemetry[?source=&metric=&after_ms=] (telemetry_handlers.cc).
Response getRunTelemetry(Context& ctx, const Call& call);

// Faults in force (fault_handlers.cc): GET /v1/faults, POST /v1/faults/ID/revert.
Response listFaults(Context& ctx, const Call& call);
// agent_handlers.cc: POST /v1/agents/register.
Response registerAgent(Context& ctx, const Call& call);
Response revertFault(Context& ctx, const Call& call);

// POST /v1/scenarios/validate (scenario_handlers.cc).
Response validateScenario(Context& ctx, const Call& call);

// Suites and suite runs (suite_handlers.cc): /v1/suites[/NAME], /v1/suite-runs[/ID[/abort]].
Response listSuites(Context& ctx, const Call& call);
Response getSuite(Context& ctx, const Call& call);
Response replaceSuite(Context& ctx, const Call& call);
Response deleteSuite(Context& ctx, const Call& call);
Response createSuiteRun(Context& ctx, const Call& call);
Response listSuiteRuns(Context& ctx, const Call& call);
Response getSuiteRun(Context& ctx, const Call& call);
Response abortSuiteRun(Context& ctx, const Call& call);

// Schedules (schedule_handlers.cc): /v1/schedules[/ID].
Response listSchedules(Context& ctx, const Call& call);
Response createSchedule(Context& ctx, const Call& call);
Response getSchedule(Context& ctx, const Call& call);
Response deleteSchedule(Context& ctx, const Call& call);

// Tokens, identity and audit (auth_handlers.cc): /v1/whoami, /v1/tokens[/ID], /v1/audit.
Response whoami(Context& ctx, const Call& call);
Response listTokens(Context& ctx, const Call& call);
Response createToken(Context& ctx, const Call& call);
Response revokeToken(Context& ctx, const Call& call);
Response listAudit(Context& ctx, const Call& call);

// GET /v1/runs/{id}/stream (stream_handlers.cc), called by Api::openStream after authentication:
// the run's event stream, or nullptr with *refusal set (404 for an unknown run...).
std::unique_ptr<core::EventStream> openRunStream(Context& ctx, const Call& call, Response* refusal);

// The JSON shapes of docs/api.md shared by run_handlers.cc and stream_handlers.cc: a run summary,
// a run event, and one sample with its bus bandwidth for a ring of `world_size` ranks.
nlohmann::json runSummary(const store::RunRecord& run);
nlohmann::json eventJson(const store::EventRecord& event);
nlohmann::json sampleJson(const store::SampleRow& sample, int world_size);
// The ring size busbw is computed for: the ranks that reported (the highest rank plus one,
// Store::sampleRankCount), or the hosts the scenario names when more.
int runWorldSize(const store::RunRecord& run, int reported_ranks);
// passed, failed, aborted, interrupted, error.

// The kind catalog for `fabric` from its agents (ApiDeps::kinds), or an empty one when the server
// has none; kUnavailable (503) naming the host whose agent could not be asked.
core::Result<scenarios::KindCatalog> kindCatalogFor(Context& ctx, const scenarios::Fabric& fabric);

// Parses a scenario document and validates it: against `fabric_name` when that fabric is
// registered, otherwise with validateKindsAndTiming (targets cannot be checked without a fabric;
// kinds are then those of the controller's embedded agent, see FabricAgents::kindCatalog).
// kInvalidArgument / kUnprocessable naming the field; a catalog failure other than kNotFound is
// returned as is.
core::Result<scenarios::Scenario> parseAndValidate(Context& ctx, const nlohmann::json& document,
                                                   const std::string& fabric_name);

}  // namespace fabric_chaos::api::internal
