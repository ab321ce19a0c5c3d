// /v1/schedules (docs/api.md, "Schedules") through Api::handle against a real in-memory Store,
// with auth off so that these tests are about the handlers only.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "server/api/api.h"
#include "store/store.h"
#include "tests/api/api_test_support.h"

namespace fabric_chaos::api {
namespace {

using nlohmann::json;
using testing::expectError;

class SchedulesApiTest : public testing::ApiFixture {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(openStore());
    ASSERT_TRUE(store_->putScenario("link-flap", json{{"name", "link-flap"}}, true).isOk());
    ASSERT_TRUE(
        store_->putSuite("acc", json{{"name", "acc"}, {"scenarios", {"link-flap"}}}, true).isOk());
    ApiDeps deps;
    deps.store = store_.get();
    deps.suites = &suites_;
    deps.require_auth = false;
    api_ = std::make_unique<Api>(std::move(deps));
  }
};

TEST_F(SchedulesApiTest, CreateGetListDelete) {
  Response created = call("POST", "/v1/schedules",
                          json{{"cron", "*/30 * * * *"}, {"scenario", "link-flap"}}.dump());
  ASSERT_EQ(created.status, 201) << created.body;
  json body = json::parse(created.body);
  const int64_t id = body["id"];
  EXPECT_EQ(body["cron"], "*/30 * * * *");
  EXPECT_EQ(body["scenario"], "link-flap");
  EXPECT_TRUE(body["suite"].is_null());
  EXPECT_TRUE(body["fabric"].is_null());
  EXPECT_EQ(body["enabled"], true);
  EXPECT_TRUE(body["last_fired_ms"].is_null());
  EXPECT_EQ(body["last_result"], "");
  // The first half hour after creation.
  const int64_t created_ms = body["created_ms"];
  const int64_t next = body["next_fire_ms"];
  EXPECT_GT(next, created_ms);
  EXPECT_LE(next, created_ms + 30 * 60 * 1000);
  EXPECT_EQ(next % (30 * 60 * 1000), 0);

  Response suite = call("POST", "/v1/schedules",
                        json{{"cron", "0 3 * * mon-fri"},
                             {"suite", "acc"},
                             {"fabric", "netns-lab"},
                             {"enabled", false}}
                            .dump());
  ASSERT_EQ(suite.status, 201) << suite.body;
  json suite_body = json::parse(suite.body);
  EXPECT_EQ(suite_body["suite"], "acc");
  EXPECT_EQ(suite_body["fabric"], "netns-lab");
  EXPECT_EQ(suite_body["enabled"], false);
  EXPECT_TRUE(suite_body["next_fire_ms"].is_null()) << "disabled";

  ASSERT_TRUE(store_->markScheduleFired(id, created_ms + 1000, "run 12").isOk());
  Response got = call("GET", "/v1/schedules/" + std::to_string(id));
  ASSERT_EQ(got.status, 200) << got.body;
  json got_body = json::parse(got.body);
  EXPECT_EQ(got_body["last_fired_ms"], created_ms + 1000);
  EXPECT_EQ(got_body["last_result"], "run 12");

  Response list = call("GET", "/v1/schedules");
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(json::parse(list.body)["schedules"].size(), 2u);

  EXPECT_EQ(call("DELETE", "/v1/schedules/" + std::to_string(id)).status, 204);
  expectError(call("GET", "/v1/schedules/" + std::to_string(id)), 404, "NOT_FOUND",
              "schedule " + std::to_string(id) + " not found");
  expectError(call("DELETE", "/v1/schedules/" + std::to_string(id)), 404, "NOT_FOUND", "not found");
  expectError(call("GET", "/v1/schedules/abc"), 400, "INVALID_ARGUMENT", "schedule id");
}

TEST_F(SchedulesApiTest, Errors) {
  struct Case {
    const char* what;
    json body;
    int status;
    const char* code;
    const char* message;
  };
  const Case cases[] = {
      {"bad hour",
       {{"cron", "0 25 * * *"}, {"scenario", "link-flap"}},
       400,
       "INVALID_ARGUMENT",
       "cron field 2 (hour): 25 is out of range 0-23"},
      {"four fields",
       {{"cron", "* * * *"}, {"scenario", "link-flap"}},
       400,
       "INVALID_ARGUMENT",
       "expected 5 fields"},
      {"no cron", {{"scenario", "link-flap"}}, 400, "INVALID_ARGUMENT", "cron: required"},
      {"cron not a string",
       {{"cron", 5}, {"scenario", "link-flap"}},
       400,
       "INVALID_ARGUMENT",
       "cron: must be a string"},
      {"both",
       {{"cron", "* * * * *"}, {"scenario", "link-flap"}, {"suite", "acc"}},
       400,
       "INVALID_ARGUMENT",
       "exactly one of scenario and suite"},
      {"neither",
       {{"cron", "* * * * *"}},
       400,
       "INVALID_ARGUMENT",
       "exactly one of scenario and suite"},
      {"unknown field",
       {{"cron", "* * * * *"}, {"scenario", "link-flap"}, {"every", 5}},
       400,
       "INVALID_ARGUMENT",
       "unknown field \"every\""},
      {"bad enabled",
       {{"cron", "* * * * *"}, {"scenario", "link-flap"}, {"enabled", "yes"}},
       400,
       "INVALID_ARGUMENT",
       "enabled: must be true or false"},
      {"empty fabric",
       {{"cron", "* * * * *"}, {"scenario", "link-flap"}, {"fabric", ""}},
       400,
       "INVALID_ARGUMENT",
       "fabric: must be a non-empty string"},
      {"missing scenario",
       {{"cron", "* * * * *"}, {"scenario", "nope"}},
       422,
       "UNPROCESSABLE",
       "scenario nope does not exist"},
      {"missing suite",
       {{"cron", "* * * * *"}, {"suite", "nope"}},
       422,
       "UNPROCESSABLE",
       "suite nope does not exist"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    expectError(call("POST", "/v1/schedules", c.body.dump()), c.status, c.code, c.message);
  }
  EXPECT_TRUE(store_->listSchedules()->empty());
  expectError(call("PUT", "/v1/schedules/1", "{}"), 405, "METHOD_NOT_ALLOWED", "DELETE");
}

}  // namespace
}  // namespace fabric_chaos::api
