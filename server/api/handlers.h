#pragma once
// The /v1 route handlers behind Api::handle (internal to server/api). Each one is a function of
// the dependencies and the decoded request; failures are returned as error Responses, never thrown
// (Api::handle still turns a stray exception into a 500).

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "scenarios/model.h"
#include "scenarios/validate.h"
#include "server/api/api.h"

namespace fabric_chaos::api::internal {

struct Context {
  const ApiDeps& deps;
  // Serializes scenario create/replace/delete so that "409 if it exists" is not a race between
  // two requests for the same name.
  std::mutex& scenario_mu;
};

struct Call {
  const Request& request;
  std::vector<std::string> params;  // captured path segments (":name", ":id"), decoded
  std::map<std::string, std::string> query;
};

using Handler = Response (*)(Context& ctx, const Call& call);

// System: /healthz, /v1/capabilities, /v1/fabrics[/NAME].
Response getHealth(Context& ctx, const Call& call);
Response getCapabilities(Context& ctx, const Call& call);
Response listFabrics(Context& ctx, const Call& call);
Response getFabric(Context& ctx, const Call& call);

// Scenarios: /v1/scenarios[/NAME].
Response listScenarios(Context& ctx, const Call& call);
Response getScenario(Context& ctx, const Call& call);
Response createScenario(Context& ctx, const Call& call);
Response replaceScenario(Context& ctx, const Call& call);
Response deleteScenario(Context& ctx, const Call& call);

// Runs: /v1/runs[/ID[/abort|/samples|/events]].
Response listRuns(Context& ctx, const Call& call);
Response createRun(Context& ctx, const Call& call);
Response getRun(Context& ctx, const Call& call);
Response abortRun(Context& ctx, const Call& call);
Response getRunSamples(Context& ctx, const Call& call);
Response getRunEvents(Context& ctx, const Call& call);

// Parses a scenario document and validates it: against `fabric_name` when that fabric is
// registered, otherwise with validateKindsAndTiming (targets cannot be checked without a fabric).
// kInvalidArgument / kUnprocessable naming the field; a catalog failure other than kNotFound is
// returned as is.
core::Result<scenarios::Scenario> parseAndValidate(Context& ctx, const nlohmann::json& document,
                                                   const std::string& fabric_name);

}  // namespace fabric_chaos::api::internal
