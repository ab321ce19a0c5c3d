// /v1/suites and /v1/suite-runs (docs/api.md, "Suites") through Api::handle against a real
// in-memory Store and a fake SuiteService, with auth off so that these tests are about the
// handlers only.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "server/api/api.h"
#include "store/store.h"
#include "tests/api/api_test_support.h"
#include "tests/fakes/fake_services.h"

namespace fabric_chaos::api {
namespace {

using core::Status;
using core::StatusCode;
using fakes::FakeFabricCatalog;
using nlohmann::json;
using testing::expectError;
using testing::flapScenario;

class SuitesApiTest : public testing::ApiFixture {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(openStore());
    for (const char* name : {"link-flap", "packet-loss"}) {
      ASSERT_TRUE(store_->putScenario(name, flapScenario(name), true).isOk());
    }
    fabrics_.add(FakeFabricCatalog::netnsLab(4));
    ApiDeps deps;
    deps.store = store_.get();
    deps.fabrics = &fabrics_;
    deps.suites = &suites_;
    deps.default_fabric = "netns-lab";
    deps.require_auth = false;
    api_ = std::make_unique<Api>(std::move(deps));
  }
};

TEST_F(SuitesApiTest, PutGetListDelete) {
  const json doc = {{"description", "acceptance"},
                    {"scenarios", {"link-flap", "packet-loss"}},
                    {"stop_on_failure", true}};
  Response created = call("PUT", "/v1/suites/acc", doc.dump());
  ASSERT_EQ(created.status, 201) << created.body;
  json body = json::parse(created.body);
  EXPECT_EQ(body["name"], "acc");  // filled in from the path
  EXPECT_EQ(body["scenarios"], json::array({"link-flap", "packet-loss"}));

  json replaced_doc = doc;
  replaced_doc["name"] = "acc";
  replaced_doc["scenarios"] = {"packet-loss"};
  Response replaced = call("PUT", "/v1/suites/acc", replaced_doc.dump());
  EXPECT_EQ(replaced.status, 200) << replaced.body;

  json got = get("/v1/suites/acc");
  EXPECT_EQ(got["scenarios"], json::array({"packet-loss"}));
  json list = get("/v1/suites");
  ASSERT_EQ(list["suites"].size(), 1u);
  EXPECT_EQ(list["suites"][0]["name"], "acc");
  EXPECT_EQ(list["suites"][0]["description"], "acceptance");
  EXPECT_EQ(list["suites"][0]["stop_on_failure"], true);
  EXPECT_EQ(list["suites"][0]["builtin"], false);
  EXPECT_TRUE(list["suites"][0]["fabric"].is_null());

  EXPECT_EQ(call("DELETE", "/v1/suites/acc").status, 204);
  expectError(call("GET", "/v1/suites/acc"), 404, "NOT_FOUND", "suite acc not found");
  expectError(call("DELETE", "/v1/suites/acc"), 404, "NOT_FOUND", "suite acc not found");
}

TEST_F(SuitesApiTest, DocumentErrors) {
  struct Case {
    const char* what;
    const char* path;
    json body;
    int status;
    const char* code;
    const char* message;
  };
  const Case cases[] = {
      {"unknown field",
       "/v1/suites/acc",
       {{"scenarios", {"link-flap"}}, {"steps", 1}},
       400,
       "INVALID_ARGUMENT",
       "unknown field \"steps\""},
      {"missing scenarios", "/v1/suites/acc", json::object(), 400, "INVALID_ARGUMENT",
       "scenarios: required"},
      {"empty scenarios",
       "/v1/suites/acc",
       {{"scenarios", json::array()}},
       400,
       "INVALID_ARGUMENT",
       "non-empty list"},
      {"scenario not a string",
       "/v1/suites/acc",
       {{"scenarios", {"link-flap", 3}}},
       400,
       "INVALID_ARGUMENT",
       "scenarios[1]: must be a scenario name"},
      {"bad scenario name",
       "/v1/suites/acc",
       {{"scenarios", {"Bad Name"}}},
       400,
       "INVALID_ARGUMENT",
       "scenarios[0]: \"Bad Name\" is not a valid"},
      {"missing scenario",
       "/v1/suites/acc",
       {{"scenarios", {"link-flap", "nope"}}},
       422,
       "UNPROCESSABLE",
       "scenarios[1]: scenario nope does not exist"},
      {"name mismatch",
       "/v1/suites/acc",
       {{"name", "other"}, {"scenarios", {"link-flap"}}},
       400,
       "INVALID_ARGUMENT",
       "does not match the path name"},
      {"bad path name",
       "/v1/suites/Acc!",
       {{"scenarios", {"link-flap"}}},
       400,
       "INVALID_ARGUMENT",
       "not a valid suite name"},
      {"bad stop_on_failure",
       "/v1/suites/acc",
       {{"scenarios", {"link-flap"}}, {"stop_on_failure", "yes"}},
       400,
       "INVALID_ARGUMENT",
       "stop_on_failure: must be true or false"},
      {"bad fabric",
       "/v1/suites/acc",
       {{"scenarios", {"link-flap"}}, {"fabric", ""}},
       400,
       "INVALID_ARGUMENT",
       "fabric: must be a non-empty string"},
      {"bad description",
       "/v1/suites/acc",
       {{"scenarios", {"link-flap"}}, {"description", 1}},
       400,
       "INVALID_ARGUMENT",
       "description: must be a string"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    expectError(call("PUT", c.path, c.body.dump()), c.status, c.code, c.message);
  }
  expectError(call("PUT", "/v1/suites/acc", "{\"scenarios\": ["), 400, "INVALID_ARGUMENT",
              "malformed JSON");
  EXPECT_TRUE(store_->listSuites()->empty());
}

TEST_F(SuitesApiTest, BuiltinSuitesAreReadOnly) {
  ASSERT_TRUE(store_
                  ->putSuite("expansion-acceptance",
                             json{{"name", "expansion-acceptance"},
                                  {"scenarios", {"link-flap", "packet-loss"}}},
                             true)
                  .isOk());
  expectError(
      call("PUT", "/v1/suites/expansion-acceptance", json{{"scenarios", {"link-flap"}}}.dump()),
      409, "FAILED_PRECONDITION", "built-in");
  expectError(call("DELETE", "/v1/suites/expansion-acceptance"), 409, "FAILED_PRECONDITION",
              "built-in");
  EXPECT_EQ(get("/v1/suites")["suites"][0]["builtin"], true);
}

TEST_F(SuitesApiTest, StartingASuiteRun) {
  ASSERT_TRUE(
      store_->putSuite("acc", json{{"name", "acc"}, {"scenarios", {"link-flap"}}}, false).isOk());
  suites_.setNextId(5);
  Response started = call("POST", "/v1/suite-runs", json{{"suite", "acc"}}.dump());
  ASSERT_EQ(started.status, 202) << started.body;
  json body = json::parse(started.body);
  EXPECT_EQ(body["id"], 5);
  EXPECT_EQ(body["state"], "queued");
  EXPECT_EQ(body["links"]["self"], "/v1/suite-runs/5");
  auto submissions = suites_.submissions();
  ASSERT_EQ(submissions.size(), 1u);
  EXPECT_EQ(submissions[0].suite_name, "acc");
  EXPECT_EQ(submissions[0].suite["scenarios"], json::array({"link-flap"}));
  EXPECT_EQ(submissions[0].fabric, "");

  Response on_fabric =
      call("POST", "/v1/suite-runs", json{{"suite", "acc"}, {"fabric", "netns-lab"}}.dump());
  EXPECT_EQ(on_fabric.status, 202) << on_fabric.body;
  EXPECT_EQ(suites_.submissions()[1].fabric, "netns-lab");

  struct Case {
    const char* what;
    std::string body;
    int status;
    const char* code;
    const char* message;
  };
  const Case cases[] = {
      {"unknown suite", json{{"suite", "nope"}}.dump(), 404, "NOT_FOUND", "suite nope not found"},
      {"no suite", "{}", 400, "INVALID_ARGUMENT", "suite: required"},
      {"suite not a string", json{{"suite", 1}}.dump(), 400, "INVALID_ARGUMENT",
       "suite: must be a suite name"},
      {"unknown field", json{{"suite", "acc"}, {"gates", 1}}.dump(), 400, "INVALID_ARGUMENT",
       "unknown field \"gates\""},
      {"unregistered fabric", json{{"suite", "acc"}, {"fabric", "x"}}.dump(), 422, "UNPROCESSABLE",
       "fabric x is not registered"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    expectError(call("POST", "/v1/suite-runs", c.body), c.status, c.code, c.message);
  }

  // A scenario deleted after the suite was saved is named at submission.
  ASSERT_TRUE(store_->putScenario("temp", flapScenario("temp"), false).isOk());
  ASSERT_TRUE(
      store_->putSuite("t", json{{"name", "t"}, {"scenarios", {"link-flap", "temp"}}}, false)
          .isOk());
  ASSERT_TRUE(store_->deleteScenario("temp").isOk());
  expectError(call("POST", "/v1/suite-runs", json{{"suite", "t"}}.dump()), 422, "UNPROCESSABLE",
              "suite t: scenarios[1]: scenario temp does not exist");

  suites_.failSubmitOn(3, Status(StatusCode::kUnavailable, "server is shutting down"));
  expectError(call("POST", "/v1/suite-runs", json{{"suite", "acc"}}.dump()), 503, "UNAVAILABLE",
              "shutting down");
  EXPECT_EQ(suites_.submissions().size(), 2u);
}

TEST_F(SuitesApiTest, SuiteRunViewHasOneEntryPerScenario) {
  const json suite = {{"name", "acc"}, {"scenarios", {"link-flap", "packet-loss", "link-flap"}}};
  auto id = store_->createSuiteRun("acc", suite, "netns-lab");
  ASSERT_TRUE(id.isOk());
  ASSERT_TRUE(store_->setSuiteRunState(*id, "running", "").isOk());
  auto first = store_->createRun("link-flap", flapScenario("link-flap"), "netns-lab");
  ASSERT_TRUE(first.isOk());
  ASSERT_TRUE(store_->finishRun(*first, "passed", 71.5, json::object(), "").isOk());
  ASSERT_TRUE(store_->appendSuiteRunRun(*id, *first).isOk());

  json running = get("/v1/suite-runs/" + std::to_string(*id));
  EXPECT_EQ(running["id"], *id);
  EXPECT_EQ(running["suite"], "acc");
  EXPECT_EQ(running["fabric"], "netns-lab");
  EXPECT_EQ(running["state"], "running");
  EXPECT_TRUE(running["passed"].is_null());
  EXPECT_TRUE(running["finished_ms"].is_null());
  ASSERT_EQ(running["runs"].size(), 3u);
  EXPECT_EQ(
      running["runs"][0],
      (json{{"scenario", "link-flap"}, {"run_id", *first}, {"state", "passed"}, {"score", 71.5}}));
  EXPECT_EQ(running["runs"][1], (json{{"scenario", "packet-loss"},
                                      {"run_id", nullptr},
                                      {"state", "pending"},
                                      {"score", nullptr}}));

  // packet-loss could not start; the third scenario ran and failed.
  auto third = store_->createRun("link-flap", flapScenario("link-flap"), "netns-lab");
  ASSERT_TRUE(third.isOk());
  ASSERT_TRUE(store_->finishRun(*third, "failed", 10.0, json::object(), "").isOk());
  ASSERT_TRUE(store_->appendSuiteRunRun(*id, *third).isOk());
  ASSERT_TRUE(store_->setSuiteRunState(*id, "failed", "scenario packet-loss: ...").isOk());

  json done = get("/v1/suite-runs/" + std::to_string(*id));
  EXPECT_EQ(done["state"], "failed");
  EXPECT_EQ(done["passed"], false);
  EXPECT_TRUE(done["finished_ms"].is_number());
  EXPECT_EQ(done["error"], "scenario packet-loss: ...");
  EXPECT_EQ(done["runs"][1]["state"], "skipped");
  EXPECT_TRUE(done["runs"][1]["run_id"].is_null());
  EXPECT_EQ(done["runs"][2]["run_id"], *third);
  EXPECT_EQ(done["runs"][2]["state"], "failed");

  json list = get("/v1/suite-runs?limit=1");
  ASSERT_EQ(list["suite_runs"].size(), 1u);
  EXPECT_EQ(list["suite_runs"][0], done);
  expectError(call("GET", "/v1/suite-runs?limit=0"), 400, "INVALID_ARGUMENT", "limit");
  expectError(call("GET", "/v1/suite-runs/99"), 404, "NOT_FOUND", "suite run 99 not found");
  expectError(call("GET", "/v1/suite-runs/x"), 400, "INVALID_ARGUMENT", "suite run id");
}

TEST_F(SuitesApiTest, AbortGoesToTheSuiteService) {
  ASSERT_TRUE(
      store_->putSuite("acc", json{{"name", "acc"}, {"scenarios", {"link-flap"}}}, false).isOk());
  ASSERT_EQ(call("POST", "/v1/suite-runs", json{{"suite", "acc"}}.dump()).status, 202);
  Response aborted = call("POST", "/v1/suite-runs/1/abort");
  EXPECT_EQ(aborted.status, 202) << aborted.body;
  EXPECT_EQ(json::parse(aborted.body)["id"], 1);
  suites_.setAbortResult(
      1, Status(StatusCode::kFailedPrecondition, "suite run 1 already finished (aborted)"));
  expectError(call("POST", "/v1/suite-runs/1/abort"), 409, "FAILED_PRECONDITION",
              "already finished");
  expectError(call("POST", "/v1/suite-runs/7/abort"), 404, "NOT_FOUND", "suite run 7");
  EXPECT_EQ(suites_.abortCalls(), (std::vector<int64_t>{1, 1, 7}));
  expectError(call("GET", "/v1/suite-runs/1/abort"), 405, "METHOD_NOT_ALLOWED", "POST");
}

}  // namespace
}  // namespace fabric_chaos::api
