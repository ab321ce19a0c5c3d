#include "scenarios/schedule/suite_runner.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/fakes/fake_services.h"
#include "tests/scenarios/schedule/schedule_test_support.h"

namespace fabric_chaos::scenarios::schedule {
namespace {

using core::StatusCode;
using test_support::scenarioDoc;
using test_support::StoreBackedRunService;

class SuiteRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = store::Store::open(":memory:");
    ASSERT_TRUE(store.isOk()) << store.status().toString();
    store_ = std::move(store).value();
    for (const char* name : {"a", "b", "c"}) {
      ASSERT_TRUE(store_->putScenario(name, scenarioDoc(name), false).isOk());
    }
    runs_ = std::make_unique<StoreBackedRunService>(store_.get());
    fabrics_.add(fakes::FakeFabricCatalog::netnsLab());
    SuiteRunnerDeps deps;
    deps.store = store_.get();
    deps.runs = runs_.get();
    deps.fabrics = &fabrics_;
    deps.kinds = test_support::testKinds;
    SuiteRunnerOptions options;
    options.poll_interval_ms = 5;
    runner_ = std::make_unique<SuiteRunner>(deps, options);
  }

  void TearDown() override { runner_.reset(); }

  int64_t submit(std::vector<std::string> scenarios, bool stop_on_failure = false,
                 const std::string& fabric = "") {
    json suite = {{"name", "acc"}, {"scenarios", scenarios}};
    if (stop_on_failure) suite["stop_on_failure"] = true;
    auto id = runner_->submitSuite("acc", suite, fabric);
    EXPECT_TRUE(id.isOk()) << id.status().toString();
    return id.isOk() ? *id : 0;
  }

  // Waits for the next run to be submitted (the n-th, 1-based) and returns its id; 0 on timeout.
  int64_t awaitRun(size_t n) {
    for (int i = 0; i < 2000; ++i) {
      auto submitted = runs_->submitted();
      if (submitted.size() >= n) return submitted[n - 1].id;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ADD_FAILURE() << "run " << n << " was never submitted";
    return 0;
  }

  void finish(int64_t run_id, const std::string& state) {
    ASSERT_TRUE(store_->finishRun(run_id, state, 50.0, json::object(), "").isOk());
  }

  store::SuiteRunRecord finished(int64_t id) {
    EXPECT_TRUE(runner_->waitIdle(5000)) << "suite run " << id << " did not finish";
    auto record = store_->getSuiteRun(id);
    EXPECT_TRUE(record.isOk()) << record.status().toString();
    return record.isOk() ? *record : store::SuiteRunRecord{};
  }

  std::unique_ptr<store::Store> store_;
  std::unique_ptr<StoreBackedRunService> runs_;
  fakes::FakeFabricCatalog fabrics_;
  std::unique_ptr<SuiteRunner> runner_;
};

// Table-driven: each scenario's run ends in the given state (in order, as they are submitted);
// which runs were started, the verdict and the error follow.
TEST_F(SuiteRunnerTest, Verdicts) {
  struct Case {
    const char* what;
    std::vector<std::string> scenarios;
    bool stop_on_failure;
    std::vector<std::string> run_states;  // one per run the suite starts
    const char* verdict;
    std::vector<std::string> error_parts;
  };
  const Case cases[] = {
      {"all pass", {"a", "b", "c"}, false, {"passed", "passed", "passed"}, "passed", {}},
      {"one fails, the rest still run",
       {"a", "b", "c"},
       false,
       {"passed", "failed", "passed"},
       "failed",
       {"scenario b: run", "failed"}},
      {"stop_on_failure skips the rest",
       {"a", "b", "c"},
       true,
       {"failed"},
       "failed",
       {"scenario a: run", "skipped 2 scenario(s)"}},
      {"failed wins over error", {"a", "b"}, false, {"error", "failed"}, "failed", {}},
      {"a run aborted on its own", {"a", "b"}, false, {"aborted", "passed"}, "aborted", {}},
      {"an interrupted run is an error", {"a"}, false, {"interrupted"}, "error", {"interrupted"}},
      {"missing scenario", {"a", "gone"}, false, {"passed"}, "error", {"scenario gone not found"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const size_t before = runs_->submitted().size();
    const int64_t id = submit(c.scenarios, c.stop_on_failure);
    for (size_t i = 0; i < c.run_states.size(); ++i) {
      finish(awaitRun(before + i + 1), c.run_states[i]);
    }
    const store::SuiteRunRecord record = finished(id);
    EXPECT_EQ(record.state, c.verdict);
    EXPECT_GT(record.finished_ms, 0);
    EXPECT_EQ(runs_->submitted().size(), before + c.run_states.size()) << "runs started";
    std::vector<int64_t> expected_ids;
    for (size_t i = 0; i < c.run_states.size(); ++i) {
      expected_ids.push_back(runs_->submitted()[before + i].id);
    }
    EXPECT_EQ(record.run_ids, expected_ids);
    for (const std::string& part : c.error_parts) {
      EXPECT_NE(record.error.find(part), std::string::npos) << record.error;
    }
    if (std::string(c.verdict) == "passed") {
      EXPECT_EQ(record.error, "");
    }
  }
}

TEST_F(SuiteRunnerTest, RunsScenariosInOrderOnTheResolvedFabric) {
  fabrics_.add(fakes::FakeFabricCatalog::netnsLab(4, "other"));
  // The request's fabric wins over the suite's.
  json suite = {{"name", "acc"}, {"scenarios", {"b", "a"}}, {"fabric", "nope"}};
  auto id = runner_->submitSuite("acc", suite, "other");
  ASSERT_TRUE(id.isOk());
  finish(awaitRun(1), "passed");
  finish(awaitRun(2), "passed");
  EXPECT_EQ(finished(*id).state, "passed");
  auto submitted = runs_->submitted();
  ASSERT_EQ(submitted.size(), 2u);
  EXPECT_EQ(submitted[0].scenario, "b");
  EXPECT_EQ(submitted[1].scenario, "a");
  EXPECT_EQ(submitted[0].fabric, "other");
  EXPECT_EQ(store_->getSuiteRun(*id)->fabric, "other");
  EXPECT_EQ(store_->getRun(submitted[1].id)->attributes.value("suite_run_id", int64_t{0}), *id);

  // Without a request fabric, the suite's: here one that is not registered.
  auto unregistered = runner_->submitSuite("acc", suite, "");
  ASSERT_TRUE(unregistered.isOk());
  const store::SuiteRunRecord record = finished(*unregistered);
  EXPECT_EQ(record.state, "error");
  EXPECT_EQ(record.fabric, "nope");
  EXPECT_NE(record.error.find("fabric nope is not registered"), std::string::npos) << record.error;
  EXPECT_EQ(runs_->submitted().size(), 2u);

  // Neither: the scenario's own, else the default netns-lab.
  auto by_default = runner_->submitSuite("acc", json{{"scenarios", {"a"}}}, "");
  ASSERT_TRUE(by_default.isOk());
  finish(awaitRun(3), "passed");
  EXPECT_EQ(finished(*by_default).state, "passed");
  EXPECT_EQ(runs_->submitted()[2].fabric, "netns-lab");
}

TEST_F(SuiteRunnerTest, SubmitFailureIsAnError) {
  runs_->failSubmitOn(2, core::Status(StatusCode::kUnavailable, "engine is shutting down"));
  const int64_t id = submit({"a", "b", "c"});
  finish(awaitRun(1), "passed");
  finish(awaitRun(2), "passed");  // c: the second submit() (b) failed and started nothing
  const store::SuiteRunRecord record = finished(id);
  EXPECT_EQ(record.state, "error");
  EXPECT_NE(record.error.find("scenario b: cannot start a run: engine is shutting down"),
            std::string::npos)
      << record.error;
  EXPECT_EQ(record.run_ids.size(), 2u);  // a and c
}

TEST_F(SuiteRunnerTest, InvalidScenarioIsAnErrorNamingIt) {
  json bad = scenarioDoc("bad");
  bad["steps"][0]["target"]["host"] = "h9";
  ASSERT_TRUE(store_->putScenario("bad", bad, false).isOk());
  const int64_t id = submit({"bad"});
  const store::SuiteRunRecord record = finished(id);
  EXPECT_EQ(record.state, "error");
  EXPECT_NE(record.error.find("scenario bad"), std::string::npos) << record.error;
  EXPECT_NE(record.error.find("h9"), std::string::npos) << record.error;
  EXPECT_TRUE(runs_->submitted().empty());
}

TEST_F(SuiteRunnerTest, AbortAbortsTheCurrentRunAndSkipsTheRest) {
  const int64_t id = submit({"a", "b", "c"});
  finish(awaitRun(1), "passed");
  const int64_t current = awaitRun(2);
  ASSERT_TRUE(runner_->abortSuite(id).isOk());
  EXPECT_TRUE(runner_->abortSuite(id).isOk()) << "a second abort is the same request";
  const store::SuiteRunRecord record = finished(id);
  EXPECT_EQ(record.state, "aborted");
  EXPECT_EQ(runs_->aborts(), (std::vector<int64_t>{current}));
  EXPECT_EQ(store_->getRun(current)->state, "aborted");
  EXPECT_EQ(runs_->submitted().size(), 2u) << "c must not start";
  EXPECT_NE(record.error.find("aborted by request"), std::string::npos) << record.error;
  EXPECT_NE(record.error.find("skipped 1 scenario(s)"), std::string::npos) << record.error;

  core::Status again = runner_->abortSuite(id);
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition) << again.toString();
  EXPECT_NE(again.message().find("already finished (aborted)"), std::string::npos);
  EXPECT_EQ(runner_->abortSuite(999).code(), StatusCode::kNotFound);
}

TEST_F(SuiteRunnerTest, ShutdownInterruptsAndJoins) {
  const int64_t id = submit({"a", "b"});
  const int64_t run = awaitRun(1);
  runner_->shutdown();
  auto record = store_->getSuiteRun(id);
  ASSERT_TRUE(record.isOk());
  EXPECT_EQ(record->state, "interrupted");
  EXPECT_NE(record->error.find("serve stopped"), std::string::npos) << record->error;
  // The run itself is the engine's to stop (its shutdown comes next).
  EXPECT_EQ(store_->getRun(run)->state, "queued");
  EXPECT_EQ(runs_->submitted().size(), 1u);

  auto refused = runner_->submitSuite("acc", json{{"scenarios", {"a"}}}, "");
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
}

TEST_F(SuiteRunnerTest, ManySuiteRunsAtOnce) {
  std::vector<int64_t> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(submit({"a"}));
  for (size_t n = 1; n <= ids.size(); ++n) finish(awaitRun(n), "passed");
  for (int64_t id : ids) EXPECT_EQ(finished(id).state, "passed");
  auto list = store_->listSuiteRuns(10);
  ASSERT_TRUE(list.isOk());
  EXPECT_EQ(list->size(), 4u);
}

}  // namespace
}  // namespace fabric_chaos::scenarios::schedule
