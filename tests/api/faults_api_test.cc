// GET /v1/faults (the fault journal's unreverted entries, newest first, with owner run and age)
// and POST /v1/faults/{id}/revert, against a real in-memory store and a fake FaultService.

#include <gtest/gtest.h>

#include "server/auth/tokens.h"
#include "tests/api/api_test_support.h"
#include "tests/fakes/fake_random.h"

namespace fabric_chaos::api {
namespace {

using core::Status;
using core::StatusCode;
using nlohmann::json;
using testing::expectError;

class FaultsApiTest : public testing::ApiFixture {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(openStore());
    auto admin = auth::issueToken(*store_, random_, "test-admin", store::Role::kAdmin);
    ASSERT_TRUE(admin.isOk());
    bearer_ = admin->secret;
    ApiDeps deps;
    deps.store = store_.get();
    deps.runs = &runs_;
    deps.fabrics = &fabrics_;
    deps.faults = &faults_;
    deps.kinds = testing::linkFlapKinds;
    api_ = std::make_unique<Api>(deps);
  }

  int64_t journal(int64_t run_id, const std::string& ifname, const std::string& mark) {
    json fault = {{"kind", "link_flap"},
                  {"target", {{"netns", "fcl-sw0"}, {"ifname", ifname}}},
                  {"params", {{"down_ms", 100}}}};
    auto id = store_->journalIntent(run_id, fault, {{"admin_up", true}});
    EXPECT_TRUE(id.isOk());
    if (!mark.empty()) {
      EXPECT_TRUE(store_->journalMark(*id, mark).isOk());
    }
    return *id;
  }

  fakes::FakeFaultService faults_;
  fakes::FakeRandomSource random_;
};

TEST_F(FaultsApiTest, ListsWhatIsInForceNewestFirstWithOwnerAndAge) {
  auto run = store_->createRun("flap", testing::flapScenario("flap"), "netns-lab");
  ASSERT_TRUE(run.isOk());
  ASSERT_TRUE(store_->setRunState(*run, "injecting").isOk());
  faults_.setRunning(*run);
  const int64_t gone = journal(*run, "p0", "reverted");
  const int64_t left = journal(0, "p2", "failed");
  const int64_t held = journal(*run, "p1", "applied");
  json body = get("/v1/faults");
  ASSERT_EQ(body["faults"].size(), 2u) << body.dump(2);
  const json& first = body["faults"][0];
  EXPECT_EQ(first["id"], held);
  EXPECT_EQ(first["kind"], "link_flap");
  EXPECT_EQ(first["target"]["ifname"], "p1");
  EXPECT_EQ(first["state"], "applied");
  EXPECT_EQ(first["run_id"], *run);
  EXPECT_EQ(first["run_state"], "injecting");
  EXPECT_EQ(first["owned_by_running_run"], true);
  EXPECT_EQ(first["agent"], "local");
  EXPECT_GE(first["age_ms"].get<int64_t>(), 0);
  EXPECT_LT(first["age_ms"].get<int64_t>(), 60000);
  const json& second = body["faults"][1];
  EXPECT_EQ(second["id"], left);
  EXPECT_EQ(second["state"], "failed");
  EXPECT_TRUE(second["run_id"].is_null());
  EXPECT_EQ(second["owned_by_running_run"], false);
  (void)gone;
}

TEST_F(FaultsApiTest, RevertNowGoesToTheFaultServiceAndItsRefusalsReachTheCaller) {
  const int64_t id = journal(0, "p1", "failed");
  Response ok = call("POST", "/v1/faults/" + std::to_string(id) + "/revert");
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(json::parse(ok.body)["state"], "reverted");
  EXPECT_EQ(faults_.revertCalls(), std::vector<int64_t>{id});

  faults_.setRevertResult(7, Status(StatusCode::kFailedPrecondition, "belongs to run 3"));
  expectError(call("POST", "/v1/faults/7/revert"), 409, "FAILED_PRECONDITION", "belongs to run 3");
  faults_.setRevertResult(8, Status(StatusCode::kNotFound, "no fault 8 in force"));
  expectError(call("POST", "/v1/faults/8/revert"), 404, "NOT_FOUND", "no fault 8");
  expectError(call("POST", "/v1/faults/x/revert"), 400, "INVALID_ARGUMENT", "fault id");
}

TEST_F(FaultsApiTest, AViewerMayListButNotRevert) {
  auto viewer = auth::issueToken(*store_, random_, "watcher", store::Role::kViewer);
  ASSERT_TRUE(viewer.isOk());
  bearer_ = viewer->secret;
  EXPECT_EQ(call("GET", "/v1/faults").status, 200);
  expectError(call("POST", "/v1/faults/1/revert"), 403, "PERMISSION_DENIED", "operator");
  EXPECT_TRUE(faults_.revertCalls().empty());
}

}  // namespace
}  // namespace fabric_chaos::api
