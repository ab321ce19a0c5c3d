// The run summary fields the dashboard and the CI client rely on (docs/api.md, "Runs"), the
// `fabric` filter, the `live` view, `after_ms` on samples, and POST /v1/scenarios/validate:
// through Api::handle against a real in-memory Store and fake services, with auth off (the
// `serve --no-auth` path) so that these tests are about the handlers only.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "server/api/api.h"
#include "store/store.h"
#include "tests/api/api_test_support.h"
#include "tests/fakes/fake_services.h"

namespace fabric_chaos::api {
namespace {

using core::StatusCode;
using fakes::FakeFabricCatalog;
using nlohmann::json;
using testing::expectError;
using testing::flapScenario;

class RunSummaryTest : public testing::ApiFixture {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(openStore());
    fabrics_.add(FakeFabricCatalog::netnsLab(4));
    makeApi();
  }

  void makeApi() {
    ApiDeps deps;
    deps.store = store_.get();
    deps.runs = &runs_;
    deps.fabrics = &fabrics_;
    deps.kinds = testing::linkFlapKinds;
    deps.default_fabric = "netns-lab";
    deps.require_auth = false;
    if (with_live_) {
      deps.live = [this](int64_t run_id) -> json {
        if (run_id != live_run_) return nullptr;
        return json{{"state", "injecting"}, {"elapsed_ms", 1234.5}, {"last_busbw_gbps", 0.25},
                    {"samples", 17},        {"active_faults", 1},   {"ready_ranks", 4}};
      };
    }
    api_ = std::make_unique<Api>(std::move(deps));
  }

  int64_t createRun(const std::string& scenario, const std::string& fabric) {
    auto id = store_->createRun(scenario, flapScenario(scenario), fabric);
    EXPECT_TRUE(id.isOk()) << id.status().toString();
    return id.isOk() ? *id : 0;
  }

  bool with_live_ = false;
  int64_t live_run_ = 0;
};

TEST_F(RunSummaryTest, SummaryFieldsFollowTheRunsLifecycle) {
  const int64_t queued = createRun("flap", "netns-lab");
  const int64_t passed = createRun("flap", "netns-lab");
  ASSERT_TRUE(store_->setRunState(passed, "baseline").isOk());
  ASSERT_TRUE(store_->finishRun(passed, "passed", 91.0, json{{"passed", true}}, "").isOk());
  const int64_t failed = createRun("flap", "netns-lab");
  ASSERT_TRUE(store_->setRunState(failed, "baseline").isOk());
  ASSERT_TRUE(store_->setRunAttribute(failed, "suite_run_id", 7).isOk());
  ASSERT_TRUE(store_->finishRun(failed, "failed", 12.0, json{{"passed", false}}, "").isOk());
  const int64_t errored = createRun("flap", "netns-lab");
  ASSERT_TRUE(store_->finishRun(errored, "error", std::nullopt, json::object(), "boom").isOk());

  json runs = get("/v1/runs")["runs"];
  ASSERT_EQ(runs.size(), 4u);
  std::map<int64_t, json> by_id;
  for (const json& run : runs) by_id[run["id"].get<int64_t>()] = run;
  for (const json& run : runs) {
    for (const char* key : {"id", "scenario", "fabric", "state", "score", "passed", "created_ms",
                            "started_ms", "finished_ms", "duration_ms", "error", "suite_run_id"}) {
      EXPECT_TRUE(run.contains(key)) << key << " missing in " << run.dump();
    }
  }

  EXPECT_TRUE(by_id[queued]["passed"].is_null());
  EXPECT_TRUE(by_id[queued]["duration_ms"].is_null());
  EXPECT_TRUE(by_id[queued]["suite_run_id"].is_null());

  EXPECT_EQ(by_id[passed]["passed"], true);
  EXPECT_EQ(by_id[passed]["score"], 91.0);
  ASSERT_TRUE(by_id[passed]["duration_ms"].is_number_integer());
  EXPECT_EQ(
      by_id[passed]["duration_ms"].get<int64_t>(),
      by_id[passed]["finished_ms"].get<int64_t>() - by_id[passed]["started_ms"].get<int64_t>());
  EXPECT_GE(by_id[passed]["duration_ms"].get<int64_t>(), 0);

  EXPECT_EQ(by_id[failed]["passed"], false);
  EXPECT_EQ(by_id[failed]["suite_run_id"], 7);

  // Ended without a verdict: no passed flag, but the error is there.
  EXPECT_TRUE(by_id[errored]["passed"].is_null());
  EXPECT_EQ(by_id[errored]["error"], "boom");

  // The single-run view carries the same summary.
  json one = get("/v1/runs/" + std::to_string(failed));
  EXPECT_EQ(one["suite_run_id"], 7);
  EXPECT_EQ(one["passed"], false);
  EXPECT_EQ(one["duration_ms"], by_id[failed]["duration_ms"]);
}

TEST_F(RunSummaryTest, PassedFallsBackToTheStateWithoutAStoredVerdict) {
  const int64_t id = createRun("flap", "netns-lab");
  ASSERT_TRUE(store_->finishRun(id, "failed", 3.0, json::object(), "").isOk());
  EXPECT_EQ(get("/v1/runs/" + std::to_string(id))["passed"], false);
}

TEST_F(RunSummaryTest, FabricFilterKeepsTheLimitCountingMatchingRuns) {
  const int64_t a1 = createRun("flap", "netns-lab");
  const int64_t v1 = createRun("flap", "vm-lab");
  const int64_t a2 = createRun("flap", "netns-lab");
  for (int i = 0; i < 3; ++i) createRun("flap", "vm-lab");  // newer runs of the other fabric

  json netns = get("/v1/runs?fabric=netns-lab")["runs"];
  ASSERT_EQ(netns.size(), 2u);
  EXPECT_EQ(netns[0]["id"], a2);  // newest first
  EXPECT_EQ(netns[1]["id"], a1);

  // The three newest runs are on vm-lab: a limit applied before filtering would find nothing.
  json newest = get("/v1/runs?fabric=netns-lab&limit=1")["runs"];
  ASSERT_EQ(newest.size(), 1u);
  EXPECT_EQ(newest[0]["id"], a2);

  json vm = get("/v1/runs?fabric=vm-lab&scenario=flap")["runs"];
  ASSERT_EQ(vm.size(), 4u);
  EXPECT_EQ(vm[3]["id"], v1);
  EXPECT_TRUE(get("/v1/runs?fabric=nowhere")["runs"].empty());
  EXPECT_EQ(get("/v1/runs?fabric=")["runs"].size(), 6u);  // empty = any
}

TEST_F(RunSummaryTest, LiveIsNullWithoutAnEngineView) {
  const int64_t id = createRun("flap", "netns-lab");
  json run = get("/v1/runs/" + std::to_string(id));
  ASSERT_TRUE(run.contains("live"));
  EXPECT_TRUE(run["live"].is_null());
}

TEST_F(RunSummaryTest, LiveComesFromTheEngineWhileInProgress) {
  with_live_ = true;
  makeApi();
  const int64_t other = createRun("flap", "netns-lab");
  live_run_ = createRun("flap", "netns-lab");
  ASSERT_TRUE(store_->setRunState(live_run_, "injecting").isOk());

  json live = get("/v1/runs/" + std::to_string(live_run_))["live"];
  EXPECT_EQ(live["state"], "injecting");
  EXPECT_EQ(live["elapsed_ms"], 1234.5);
  EXPECT_EQ(live["ready_ranks"], 4);
  EXPECT_TRUE(get("/v1/runs/" + std::to_string(other))["live"].is_null());
}

TEST_F(RunSummaryTest, SamplesAfterMs) {
  const int64_t id = createRun("flap", "netns-lab");
  std::vector<core::Sample> samples;
  for (int i = 0; i < 5; ++i) samples.push_back({0, i, 100.0 * i, 10.0, 1 << 20});
  ASSERT_TRUE(store_->appendSamples(id, samples).isOk());
  const std::string base = "/v1/runs/" + std::to_string(id) + "/samples";

  json later = get(base + "?after_ms=200")["samples"];
  ASSERT_EQ(later.size(), 2u);  // strictly after: 300 and 400
  EXPECT_EQ(later[0]["iteration"], 3);
  EXPECT_EQ(later[1]["start_ms"], 400.0);
  EXPECT_TRUE(later[0]["busbw_gbps"].is_number());
  EXPECT_EQ(get(base + "?after_ms=-1.5")["samples"].size(), 5u);
  EXPECT_EQ(get(base + "?after_ms=250.5&rank=1")["samples"].size(), 0u);
  expectError(call("GET", base + "?after_ms=soon"), 400, "INVALID_ARGUMENT", "after_ms");
  expectError(call("GET", base + "?after_ms="), 400, "INVALID_ARGUMENT", "after_ms");
  expectError(call("GET", base + "?after_ms=nan"), 400, "INVALID_ARGUMENT", "after_ms");
}

// --- POST /v1/scenarios/validate ---------------------------------------------------------------

std::string validateBody(const json& scenario, const std::string& fabric = "") {
  json body{{"scenario", scenario}};
  if (!fabric.empty()) body["fabric"] = fabric;
  return body.dump();
}

TEST_F(RunSummaryTest, ValidateAcceptsAValidScenario) {
  for (const std::string& fabric : {std::string(), std::string("netns-lab")}) {
    Response response =
        call("POST", "/v1/scenarios/validate", validateBody(flapScenario("ok"), fabric));
    ASSERT_EQ(response.status, 200) << response.body;
    EXPECT_EQ(json::parse(response.body), (json{{"valid", true}}));
  }
  // Nothing is stored by validation.
  EXPECT_EQ(store_->getScenario("ok").status().code(), StatusCode::kNotFound);
}

TEST_F(RunSummaryTest, ValidateNamesTheFieldAtFault) {
  json unknown_kind = flapScenario("x");
  unknown_kind["steps"][0]["kind"] = "meteor_strike";
  expectError(call("POST", "/v1/scenarios/validate", validateBody(unknown_kind)), 400,
              "INVALID_ARGUMENT", "meteor_strike");

  json missing_host = flapScenario("x");
  missing_host["steps"][0]["target"] = {{"host", "h9"}};
  expectError(call("POST", "/v1/scenarios/validate", validateBody(missing_host, "netns-lab")), 422,
              "UNPROCESSABLE", "h9");

  expectError(call("POST", "/v1/scenarios/validate", validateBody(flapScenario("x"), "nowhere")),
              422, "UNPROCESSABLE", "fabric nowhere");
  expectError(call("POST", "/v1/scenarios/validate", validateBody(flapScenario("Bad Name"))), 400,
              "INVALID_ARGUMENT", "not a valid scenario name");
  expectError(call("POST", "/v1/scenarios/validate", "{\"fabric\": \"netns-lab\"}"), 400,
              "INVALID_ARGUMENT", "scenario: required");
  expectError(call("POST", "/v1/scenarios/validate", "{\"scenario\": \"flap\"}"), 400,
              "INVALID_ARGUMENT", "scenario: must be a scenario document");
  expectError(call("POST", "/v1/scenarios/validate", "{\"scenario\": {}, \"extra\": 1}"), 400,
              "INVALID_ARGUMENT", "unknown field \"extra\"");
  expectError(call("POST", "/v1/scenarios/validate", "{\"scenario\": "), 400, "INVALID_ARGUMENT",
              "malformed JSON");
  expectError(call("POST", "/v1/scenarios/validate", "[1]"), 400, "INVALID_ARGUMENT", "array");
}

TEST_F(RunSummaryTest, ValidateIsPostOnlyAndDoesNotShadowScenarios) {
  Response get_validate = call("GET", "/v1/scenarios/validate");
  EXPECT_EQ(get_validate.status, 405) << get_validate.body;
  // A scenario name is still routed to the scenario endpoints.
  ASSERT_TRUE(store_->putScenario("flap", flapScenario("flap"), false).isOk());
  EXPECT_EQ(call("GET", "/v1/scenarios/flap").status, 200);
}

}  // namespace
}  // namespace fabric_chaos::api
