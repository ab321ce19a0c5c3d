// Migration 2 of the store: suites, suite runs, schedules, API tokens and the audit log, and the
// upgrade of a database written by a binary that only knew migration 1.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "store/store.h"
#include "tests/store/store_test_support.h"

namespace fabric_chaos::store {
namespace {

using core::StatusCode;
using test_support::openOrDie;
using test_support::RawDb;
using test_support::TempDir;

// One call that must fail: with this code, and a message containing message_part.
struct ErrorCase {
  const char* what;
  core::Status status;
  StatusCode code;
  const char* message_part;
};

void expectError(const ErrorCase& c) {
  EXPECT_EQ(c.status.code(), c.code) << c.what << ": " << c.status.toString();
  EXPECT_NE(c.status.message().find(c.message_part), std::string::npos)
      << c.what << ": " << c.status.message();
}

// The schema exactly as migration 1 released it: a database written by that binary.
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE scenarios (
  name TEXT PRIMARY KEY NOT NULL,
  document TEXT NOT NULL,
  builtin INTEGER NOT NULL DEFAULT 0,
  updated_ms INTEGER NOT NULL
);
CREATE TABLE runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  scenario_name TEXT NOT NULL,
  scenario TEXT NOT NULL,
  fabric TEXT NOT NULL,
  state TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  started_ms INTEGER NOT NULL DEFAULT 0,
  finished_ms INTEGER NOT NULL DEFAULT 0,
  score REAL,
  result TEXT NOT NULL DEFAULT '{}',
  attributes TEXT NOT NULL DEFAULT '{}',
  error TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runs_by_scenario ON runs(scenario_name, id);
CREATE INDEX runs_by_state ON runs(state, id);
CREATE TABLE run_transitions (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  state TEXT NOT NULL,
  wall_ms INTEGER NOT NULL
);
CREATE INDEX run_transitions_by_run ON run_transitions(run_id);
CREATE TABLE events (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  t_ms REAL NOT NULL,
  wall_ms INTEGER NOT NULL,
  kind TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX events_by_run ON events(run_id, t_ms);
CREATE TABLE samples (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank INTEGER NOT NULL,
  iteration INTEGER NOT NULL,
  start_ms REAL NOT NULL,
  duration_ms REAL NOT NULL,
  bytes INTEGER NOT NULL
);
CREATE INDEX samples_by_run ON samples(run_id, rank, iteration);
CREATE TABLE journal (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id INTEGER REFERENCES runs(id),
  fault TEXT NOT NULL,
  prior TEXT NOT NULL,
  state TEXT NOT NULL,
  intent_ms INTEGER NOT NULL,
  reverted_ms INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX journal_unreverted ON journal(id) WHERE state <> 'reverted';
PRAGMA user_version = 1;
)sql";

TEST(StoreMigrationTest, UpgradesAVersion1DatabaseKeepingItsRows) {
  TempDir dir;
  const std::string path = dir.file("v1.db");
  {
    RawDb raw(path, /*create=*/true);
    raw.exec(kSchemaV1);
    raw.exec(
        "INSERT INTO scenarios VALUES ('flap', '{\"steps\":3}', 1, 1000);"
        "INSERT INTO runs (scenario_name, scenario, fabric, state, created_ms) "
        "  VALUES ('flap', '{}', 'netns', 'running', 1001);"
        "INSERT INTO run_transitions VALUES (1, 'queued', 1001);"
        "INSERT INTO samples VALUES (1, 0, 1, 10.0, 2.5, 4096);"
        "INSERT INTO journal (run_id, fault, prior, state, intent_ms) "
        "  VALUES (1, '{\"kind\":\"link_flap\"}', '{}', 'applied', 1002);");
    ASSERT_EQ(raw.scalar("PRAGMA user_version"), "1");
  }

  auto store = openOrDie(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->schemaVersion(), 5);

  auto scenario = store->getScenario("flap");
  ASSERT_TRUE(scenario.isOk()) << scenario.status().toString();
  EXPECT_EQ(scenario->document, (json{{"steps", 3}}));
  EXPECT_TRUE(scenario->builtin);
  auto run = store->getRun(1);
  ASSERT_TRUE(run.isOk()) << run.status().toString();
  EXPECT_EQ(run->state, "running");
  EXPECT_EQ(store->samples(1)->size(), 1u);
  auto journal = store->unrevertedJournal();
  ASSERT_TRUE(journal.isOk());
  ASSERT_EQ(journal->size(), 1u);
  EXPECT_EQ((*journal)[0].fault["kind"], "link_flap");

  // The new tables exist and work against the old rows.
  auto suite_run = store->createSuiteRun("s", json::object(), "netns");
  ASSERT_TRUE(suite_run.isOk()) << suite_run.status().toString();
  EXPECT_TRUE(store->appendSuiteRunRun(*suite_run, 1).isOk());
  EXPECT_TRUE(store->createToken("admin", Role::kAdmin, "h1").isOk());

  RawDb raw(path);
  EXPECT_EQ(raw.scalar("PRAGMA user_version"), "5");
  test_support::expectTables(
      raw, {"suites", "suite_runs", "suite_run_runs", "schedules", "tokens", "audit", "telemetry"});
  // Reopening an up-to-date database applies nothing twice.
  store.reset();
  store = openOrDie(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->schemaVersion(), 5);
  EXPECT_EQ(store->listTokens()->size(), 1u);
}

class StoreV2Test : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = Store::open(":memory:");
    ASSERT_TRUE(store.isOk()) << store.status().toString();
    store_ = std::move(store).value();
  }

  int64_t newRun(const std::string& scenario = "link-flap") {
    auto id = store_->createRun(scenario, json{{"name", scenario}}, "netns");
    EXPECT_TRUE(id.isOk()) << id.status().toString();
    return id.isOk() ? *id : 0;
  }

  void finishRun(int64_t id, const std::string& state) {
    ASSERT_TRUE(store_->finishRun(id, state, std::nullopt, json::object(), "").isOk());
  }

  std::unique_ptr<Store> store_;
};

TEST_F(StoreV2Test, UnfinishedRunsAreTheNonFinalOnesOldestFirst) {
  const int64_t queued = newRun("a");
  const int64_t passed = newRun("b");
  const int64_t injecting = newRun("c");
  finishRun(passed, "passed");
  ASSERT_TRUE(store_->setRunState(injecting, "injecting").isOk());
  const int64_t errored = newRun("d");
  finishRun(errored, "error");

  auto unfinished = store_->unfinishedRuns();
  ASSERT_TRUE(unfinished.isOk()) << unfinished.status().toString();
  ASSERT_EQ(unfinished->size(), 2u);
  EXPECT_EQ((*unfinished)[0].id, queued);
  EXPECT_EQ((*unfinished)[0].state, "queued");
  EXPECT_EQ((*unfinished)[1].id, injecting);
  EXPECT_EQ((*unfinished)[1].state, "injecting");
  EXPECT_EQ((*unfinished)[1].scenario_name, "c");
}

TEST_F(StoreV2Test, SuitesCrudAndBuiltinProtection) {
  const json doc = {{"name", "acc"}, {"scenarios", {"link-flap", "packet-loss"}}};
  ASSERT_TRUE(store_->putSuite("acc", doc, false).isOk());
  ASSERT_TRUE(store_->putSuite("builtin-one", doc, true).isOk());
  ASSERT_TRUE(store_->putSuite("acc", json{{"v", 2}}, false).isOk());  // put replaces

  auto list = store_->listSuites();
  ASSERT_TRUE(list.isOk()) << list.status().toString();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].name, "acc");  // by name
  EXPECT_EQ((*list)[0].document, (json{{"v", 2}}));
  EXPECT_FALSE((*list)[0].builtin);
  EXPECT_GT((*list)[0].updated_ms, 0);
  EXPECT_TRUE((*list)[1].builtin);

  auto got = store_->getSuite("builtin-one");
  ASSERT_TRUE(got.isOk());
  EXPECT_EQ(got->document, doc);

  const ErrorCase cases[] = {
      {"get missing", store_->getSuite("nope").status(), StatusCode::kNotFound, "suite nope"},
      {"delete missing", store_->deleteSuite("nope"), StatusCode::kNotFound, "suite nope"},
      {"delete builtin", store_->deleteSuite("builtin-one"), StatusCode::kFailedPrecondition,
       "builtin"},
      {"user replaces builtin", store_->putSuite("builtin-one", doc, false),
       StatusCode::kFailedPrecondition, "builtin"},
      {"empty name", store_->putSuite("", doc, false), StatusCode::kInvalidArgument, "empty"},
  };
  for (const ErrorCase& c : cases) expectError(c);
  ASSERT_TRUE(store_->putSuite("builtin-one", json{{"v", 3}}, true).isOk());  // re-seed
  ASSERT_TRUE(store_->deleteSuite("acc").isOk());
  EXPECT_EQ(store_->getSuite("acc").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->listSuites()->size(), 1u);
}

TEST_F(StoreV2Test, SuiteRunLifecycle) {
  const json snapshot = {{"name", "acc"}, {"scenarios", {"a", "b"}}};
  auto id = store_->createSuiteRun("acc", snapshot, "netns-lab");
  ASSERT_TRUE(id.isOk()) << id.status().toString();

  auto queued = store_->getSuiteRun(*id);
  ASSERT_TRUE(queued.isOk()) << queued.status().toString();
  EXPECT_EQ(queued->suite_name, "acc");
  EXPECT_EQ(queued->suite, snapshot);
  EXPECT_EQ(queued->fabric, "netns-lab");
  EXPECT_EQ(queued->state, "queued");
  EXPECT_GT(queued->created_ms, 0);
  EXPECT_EQ(queued->finished_ms, 0);
  EXPECT_TRUE(queued->run_ids.empty());

  ASSERT_TRUE(store_->setSuiteRunState(*id, "running", "").isOk());
  const int64_t first = newRun("a");
  const int64_t second = newRun("b");
  ASSERT_TRUE(store_->appendSuiteRunRun(*id, second).isOk());  // order is append order, not id
  ASSERT_TRUE(store_->appendSuiteRunRun(*id, first).isOk());

  auto running = store_->getSuiteRun(*id);
  ASSERT_TRUE(running.isOk());
  EXPECT_EQ(running->state, "running");
  EXPECT_EQ(running->finished_ms, 0);
  EXPECT_EQ(running->run_ids, (std::vector<int64_t>{second, first}));

  ASSERT_TRUE(store_->setSuiteRunState(*id, "failed", "run 2 failed").isOk());
  auto failed = store_->getSuiteRun(*id);
  ASSERT_TRUE(failed.isOk());
  EXPECT_EQ(failed->state, "failed");
  EXPECT_EQ(failed->error, "run 2 failed");
  EXPECT_GE(failed->finished_ms, failed->created_ms);

  // A final verdict is never overwritten (an abort racing the worker's verdict loses).
  core::Status again = store_->setSuiteRunState(*id, "aborted", "");
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition) << again.toString();
  EXPECT_NE(again.message().find("already finished (failed)"), std::string::npos)
      << again.message();
}

TEST_F(StoreV2Test, SuiteRunErrors) {
  auto id = store_->createSuiteRun("acc", json::object(), "");
  ASSERT_TRUE(id.isOk());
  const int64_t run = newRun();
  const ErrorCase cases[] = {
      {"unknown state", store_->setSuiteRunState(*id, "injecting", ""),
       StatusCode::kInvalidArgument, "suite run state injecting"},
      {"state of missing", store_->setSuiteRunState(99, "running", ""), StatusCode::kNotFound,
       "suite run 99 not found"},
      {"append to missing suite run", store_->appendSuiteRunRun(99, run), StatusCode::kNotFound,
       "suite run 99 not found"},
      {"append missing run", store_->appendSuiteRunRun(*id, 77), StatusCode::kNotFound,
       "run 77 not found"},
      {"get missing", store_->getSuiteRun(99).status(), StatusCode::kNotFound,
       "suite run 99 not found"},
      {"zero limit", store_->listSuiteRuns(0).status(), StatusCode::kInvalidArgument, "limit"},
      {"empty suite name", store_->createSuiteRun("", json::object(), "").status(),
       StatusCode::kInvalidArgument, "suite name"},
  };
  for (const ErrorCase& c : cases) expectError(c);
  EXPECT_TRUE(store_->getSuiteRun(*id)->run_ids.empty());  // the failed append left nothing
}

TEST_F(StoreV2Test, ListSuiteRunsNewestFirstWithTheirRuns) {
  std::vector<int64_t> ids;
  for (int i = 0; i < 3; ++i) {
    auto id = store_->createSuiteRun("s" + std::to_string(i), json::object(), "");
    ASSERT_TRUE(id.isOk());
    ids.push_back(*id);
  }
  const int64_t run = newRun();
  ASSERT_TRUE(store_->appendSuiteRunRun(ids[1], run).isOk());

  auto list = store_->listSuiteRuns(2);
  ASSERT_TRUE(list.isOk()) << list.status().toString();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].id, ids[2]);
  EXPECT_TRUE((*list)[0].run_ids.empty());
  EXPECT_EQ((*list)[1].id, ids[1]);
  EXPECT_EQ((*list)[1].run_ids, (std::vector<int64_t>{run}));
}

TEST_F(StoreV2Test, InterruptUnfinishedSuiteRuns) {
  auto queued = store_->createSuiteRun("a", json::object(), "");
  auto running = store_->createSuiteRun("b", json::object(), "");
  auto passed = store_->createSuiteRun("c", json::object(), "");
  ASSERT_TRUE(queued.isOk() && running.isOk() && passed.isOk());
  ASSERT_TRUE(store_->setSuiteRunState(*running, "running", "").isOk());
  ASSERT_TRUE(store_->setSuiteRunState(*passed, "passed", "").isOk());

  auto interrupted = store_->interruptUnfinishedSuiteRuns();
  ASSERT_TRUE(interrupted.isOk()) << interrupted.status().toString();
  EXPECT_EQ(*interrupted, (std::vector<int64_t>{*queued, *running}));

  auto got = store_->getSuiteRun(*running);
  ASSERT_TRUE(got.isOk());
  EXPECT_EQ(got->state, "interrupted");
  EXPECT_GT(got->finished_ms, 0);
  EXPECT_EQ(got->error, "serve stopped while the suite run was running");
  EXPECT_EQ(store_->getSuiteRun(*queued)->state, "interrupted");
  EXPECT_EQ(store_->getSuiteRun(*passed)->state, "passed");
  EXPECT_TRUE(store_->interruptUnfinishedSuiteRuns()->empty());  // nothing twice
}

TEST_F(StoreV2Test, SchedulesCreateListFireDelete) {
  ScheduleRecord scenario_schedule;
  scenario_schedule.cron = "*/30 * * * *";
  scenario_schedule.scenario = "link-flap";
  scenario_schedule.fabric = "netns-lab";
  auto first = store_->createSchedule(scenario_schedule);
  ASSERT_TRUE(first.isOk()) << first.status().toString();

  ScheduleRecord suite_schedule;
  suite_schedule.cron = "0 3 * * 1-5";
  suite_schedule.suite = "expansion-acceptance";
  suite_schedule.enabled = false;
  suite_schedule.created_ms = 1234;  // kept when given
  auto second = store_->createSchedule(suite_schedule);
  ASSERT_TRUE(second.isOk());

  auto got = store_->getSchedule(*first);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  EXPECT_EQ(got->cron, "*/30 * * * *");
  EXPECT_EQ(got->scenario, "link-flap");
  EXPECT_EQ(got->suite, "");
  EXPECT_EQ(got->fabric, "netns-lab");
  EXPECT_TRUE(got->enabled);
  EXPECT_GT(got->created_ms, 0);
  EXPECT_EQ(got->last_fired_ms, 0);
  EXPECT_EQ(got->last_result, "");

  ASSERT_TRUE(store_->markScheduleFired(*second, 5000, "suite run 3").isOk());
  auto list = store_->listSchedules();
  ASSERT_TRUE(list.isOk());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].id, *first);
  EXPECT_EQ((*list)[1].suite, "expansion-acceptance");
  EXPECT_FALSE((*list)[1].enabled);
  EXPECT_EQ((*list)[1].created_ms, 1234);
  EXPECT_EQ((*list)[1].last_fired_ms, 5000);
  EXPECT_EQ((*list)[1].last_result, "suite run 3");

  ASSERT_TRUE(store_->deleteSchedule(*first).isOk());
  EXPECT_EQ(store_->getSchedule(*first).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->listSchedules()->size(), 1u);
}

TEST_F(StoreV2Test, ScheduleErrors) {
  ScheduleRecord both;
  both.cron = "* * * * *";
  both.scenario = "a";
  both.suite = "b";
  ScheduleRecord neither;
  neither.cron = "* * * * *";
  ScheduleRecord no_cron;
  no_cron.scenario = "a";
  const ErrorCase cases[] = {
      {"both", store_->createSchedule(both).status(), StatusCode::kInvalidArgument,
       "exactly one of scenario and suite"},
      {"neither", store_->createSchedule(neither).status(), StatusCode::kInvalidArgument,
       "exactly one of scenario and suite"},
      {"no cron", store_->createSchedule(no_cron).status(), StatusCode::kInvalidArgument, "cron"},
      {"get missing", store_->getSchedule(9).status(), StatusCode::kNotFound,
       "schedule 9 not found"},
      {"delete missing", store_->deleteSchedule(9), StatusCode::kNotFound, "schedule 9 not found"},
      {"fire missing", store_->markScheduleFired(9, 1, "run 1"), StatusCode::kNotFound,
       "schedule 9 not found"},
  };
  for (const ErrorCase& c : cases) expectError(c);
  EXPECT_TRUE(store_->listSchedules()->empty());
}

TEST_F(StoreV2Test, TokensByHashRevokeAndCount) {
  auto admin = store_->createToken("admin", Role::kAdmin, "hash-admin");
  auto ci = store_->createToken("ci", Role::kOperator, "hash-ci");
  auto alice = store_->createToken("alice", Role::kViewer, "hash-alice");
  ASSERT_TRUE(admin.isOk() && ci.isOk() && alice.isOk()) << admin.status().toString();

  auto found = store_->tokenByHash("hash-ci");
  ASSERT_TRUE(found.isOk()) << found.status().toString();
  EXPECT_EQ(found->id, *ci);
  EXPECT_EQ(found->name, "ci");
  EXPECT_EQ(found->role, Role::kOperator);
  EXPECT_EQ(found->secret_hash, "hash-ci");
  EXPECT_GT(found->created_ms, 0);
  EXPECT_EQ(found->revoked_ms, 0);
  EXPECT_EQ(found->last_used_ms, 0);

  auto unknown = store_->tokenByHash("nope");
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);

  // Table-driven: how many active tokens are at or above each role, before and after revoking.
  struct Count {
    Role at_least;
    int64_t before;
    int64_t after;
  };
  const Count counts[] = {{Role::kViewer, 3, 2}, {Role::kOperator, 2, 1}, {Role::kAdmin, 1, 1}};
  for (const Count& c : counts) {
    EXPECT_EQ(*store_->countActiveTokens(c.at_least), c.before) << roleName(c.at_least);
  }
  ASSERT_TRUE(store_->revokeToken(*ci).isOk());
  for (const Count& c : counts) {
    EXPECT_EQ(*store_->countActiveTokens(c.at_least), c.after) << roleName(c.at_least);
  }

  // A revoked token is not found by its secret, and the message says why.
  auto revoked = store_->tokenByHash("hash-ci");
  ASSERT_FALSE(revoked.isOk());
  EXPECT_EQ(revoked.status().code(), StatusCode::kNotFound);
  EXPECT_NE(revoked.status().message().find("revoked"), std::string::npos)
      << revoked.status().message();

  // Revoking twice is OK and keeps the first time.
  auto listed = store_->listTokens();
  ASSERT_TRUE(listed.isOk());
  ASSERT_EQ(listed->size(), 3u);
  const int64_t revoked_ms = (*listed)[1].revoked_ms;
  EXPECT_GT(revoked_ms, 0);
  ASSERT_TRUE(store_->revokeToken(*ci).isOk());
  EXPECT_EQ((*store_->listTokens())[1].revoked_ms, revoked_ms);

  ASSERT_TRUE(store_->touchToken(*alice, 777).isOk());
  EXPECT_EQ(store_->tokenByHash("hash-alice")->last_used_ms, 777);

  EXPECT_EQ(store_->revokeToken(99).code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->touchToken(99, 1).code(), StatusCode::kNotFound);
  auto duplicate = store_->createToken("again", Role::kViewer, "hash-admin");
  EXPECT_EQ(duplicate.status().code(), StatusCode::kAlreadyExists) << duplicate.status().toString();
  EXPECT_EQ(store_->createToken("", Role::kViewer, "x").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->createToken("x", Role::kViewer, "").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->listTokens()->size(), 3u);
}

TEST_F(StoreV2Test, AuditPagesNewestFirst) {
  for (int i = 1; i <= 5; ++i) {
    AuditRecord r;
    r.wall_ms = 1000 + i;
    r.actor = i == 5 ? "anonymous" : "ci";
    r.role = i == 5 ? "" : "operator";
    r.method = "POST";
    r.path = "/v1/runs";
    r.status = i == 5 ? 401 : 202;
    r.detail = json{{"run_id", i}};
    auto id = store_->appendAudit(r);
    ASSERT_TRUE(id.isOk()) << id.status().toString();
    EXPECT_EQ(*id, i);
  }

  struct Page {
    int limit;
    int64_t before_id;
    std::vector<int64_t> ids;
  };
  const Page pages[] = {
      {2, 0, {5, 4}}, {2, 4, {3, 2}}, {2, 2, {1}}, {2, 1, {}}, {10, 0, {5, 4, 3, 2, 1}},
  };
  for (const Page& p : pages) {
    auto page = store_->listAudit(p.limit, p.before_id);
    ASSERT_TRUE(page.isOk()) << page.status().toString();
    std::vector<int64_t> ids;
    for (const AuditRecord& r : *page) ids.push_back(r.id);
    EXPECT_EQ(ids, p.ids) << "limit " << p.limit << " before " << p.before_id;
  }

  auto newest = store_->listAudit(1, 0);
  ASSERT_TRUE(newest.isOk());
  ASSERT_EQ(newest->size(), 1u);
  const AuditRecord& r = (*newest)[0];
  EXPECT_EQ(r.wall_ms, 1005);
  EXPECT_EQ(r.actor, "anonymous");
  EXPECT_EQ(r.role, "");
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.path, "/v1/runs");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.detail, (json{{"run_id", 5}}));

  EXPECT_EQ(store_->listAudit(0, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->listAudit(5, -1).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fabric_chaos::store
