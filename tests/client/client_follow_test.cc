// The follow loop of `fabric-chaos run` against a scripted server: submission bodies, polling,
// verdicts and exit codes, refusals, an unreachable server, Ctrl-C and --timeout (both abort the
// run on the server), suites, and the progress display.

#include <gtest/gtest.h>

#include <sstream>

#include "client/follow.h"
#include "tests/client/fake_api_client.h"

namespace fabric_chaos::client {
namespace {

using nlohmann::json;
using testing::FakeApiClient;
using testing::FakeClock;

json runBody(int64_t id, const std::string& state, const json& extra = json::object()) {
  json body = {{"id", id}, {"scenario", "link-flap"}, {"fabric", "netns-lab"}, {"state", state}};
  body.update(extra);
  return body;
}

json finishedBody(int64_t id, bool passed) {
  json gates = json::array({{{"gate", "min_score"},
                             {"passed", passed},
                             {"detail", passed ? "score 90.0 >= 50.0" : "score 40.0 < 50.0"}}});
  return runBody(
      id, passed ? "passed" : "failed",
      {{"score", passed ? 90.0 : 40.0}, {"result", {{"gates", gates}, {"passed", passed}}}});
}

class FollowTest : public ::testing::Test {
 protected:
  Outcome follow() {
    FollowDeps deps;
    deps.api = &api_;
    deps.clock = &clock_;
    deps.interrupted = [this] { return interrupted_; };
    deps.progress = &progress_;
    deps.out = &out_;
    return runAndFollow(options_, deps);
  }

  void scriptQueued(int64_t id) {
    api_.script("POST", "/v1/runs", 202,
                {{"id", id}, {"state", "queued"}, {"links", {{"self", "/v1/runs/7"}}}});
  }

  RunOptions options_ = [] {
    RunOptions o;
    o.kind = TargetKind::kScenario;
    o.name = "link-flap";
    o.wait = true;
    return o;
  }();
  FakeApiClient api_;
  FakeClock clock_;
  bool interrupted_ = false;
  std::ostringstream progress_text_;
  ProgressPrinter progress_{progress_text_, false};
  std::ostringstream out_;
};

TEST_F(FollowTest, PassingRunExitsZeroAfterPollingEvery500Ms) {
  options_.fabric = "netns-lab";
  options_.gates = {{"min_score", 50.0}};
  scriptQueued(7);
  api_.script("GET", "/v1/runs/7", 200, runBody(7, "queued"));
  api_.script("GET", "/v1/runs/7", 200,
              runBody(7, "injecting",
                      {{"live",
                        {{"state", "injecting"},
                         {"elapsed_ms", 2500},
                         {"last_busbw_gbps", 1.25},
                         {"active_faults", 1}}}}));
  api_.script("GET", "/v1/runs/7", 200, finishedBody(7, true));

  Outcome outcome = follow();

  EXPECT_EQ(outcome.exit_code, kExitPassed);
  EXPECT_EQ(outcome.verdict, "passed");
  EXPECT_EQ(outcome.error, "");
  ASSERT_EQ(outcome.runs.size(), 1u);
  EXPECT_EQ(outcome.runs[0].id, 7);
  EXPECT_EQ(outcome.runs[0].state, "passed");
  EXPECT_EQ(outcome.runs[0].url, "http://fc.test:8080/v1/runs/7");
  EXPECT_EQ(outcome.runs[0].body["score"], 90.0);
  ASSERT_GE(api_.calls().size(), 1u);
  EXPECT_EQ(
      api_.calls()[0].body,
      (json{{"scenario", "link-flap"}, {"fabric", "netns-lab"}, {"gates", {{"min_score", 50.0}}}}));
  EXPECT_EQ(api_.count("GET", "/v1/runs/7"), 3);
  EXPECT_EQ(clock_.sleeps(), 2);  // between the three polls, 500 ms each
  EXPECT_NE(out_.str().find("run 7 (link-flap) queued: http://fc.test:8080/v1/runs/7"),
            std::string::npos)
      << out_.str();
  EXPECT_NE(progress_text_.str().find("injecting  2.5 s  busbw 1.250 GB/s  faults 1"),
            std::string::npos)
      << progress_text_.str();
}

TEST_F(FollowTest, VerdictAndExitCodePerFinalState) {
  struct Case {
    json final_body;
    int exit_code;
    std::string verdict;
  };
  const std::vector<Case> cases = {
      {finishedBody(7, true), 0, "passed"},
      {finishedBody(7, false), 1, "failed"},
      {runBody(7, "error", {{"error", "agent h1 unreachable"}}), 2, "error"},
      {runBody(7, "aborted", {{"error", "aborted on request"}}), 2, "error"},
      {runBody(7, "interrupted"), 2, "error"},
  };
  for (const Case& c : cases) {
    FakeApiClient api;
    api.script("POST", "/v1/runs", 202, {{"id", 7}, {"state", "queued"}});
    api.script("GET", "/v1/runs/7", 200, c.final_body);
    FakeClock clock;
    std::ostringstream out;
    FollowDeps deps{&api, &clock, [] { return false; }, nullptr, &out};
    Outcome outcome = runAndFollow(options_, deps);
    EXPECT_EQ(outcome.exit_code, c.exit_code) << c.final_body.dump();
    EXPECT_EQ(outcome.verdict, c.verdict) << c.final_body.dump();
  }
}

TEST_F(FollowTest, FileSendsTheDocumentInline) {
  options_.kind = TargetKind::kFile;
  options_.file = "s.json";
  options_.document = {{"version", 1}, {"name", "short"}, {"steps", json::array()}};
  options_.name = "short";
  scriptQueued(7);
  api_.script("GET", "/v1/runs/7", 200, finishedBody(7, true));
  Outcome outcome = follow();
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_EQ(api_.calls()[0].body, (json{{"scenario", options_.document}}));
}

TEST_F(FollowTest, RefusedSubmissionIsExitTwoWithTheServersMessage) {
  api_.script("POST", "/v1/runs", 401,
              {{"error", {{"code", "UNAUTHENTICATED"}, {"message", "unknown token"}}}});
  Outcome outcome = follow();
  EXPECT_EQ(outcome.exit_code, kExitError);
  EXPECT_EQ(outcome.verdict, "error");
  EXPECT_EQ(outcome.error, "starting scenario link-flap: HTTP 401 UNAUTHENTICATED: unknown token");
  EXPECT_EQ(api_.calls().size(), 1u);  // nothing polled
  EXPECT_TRUE(outcome.runs.empty());
}

TEST_F(FollowTest, UnprocessableScenarioIsExitTwo) {
  api_.script("POST", "/v1/runs", 404,
              {{"error", {{"code", "NOT_FOUND"}, {"message", "scenario nope not found"}}}});
  Outcome outcome = follow();
  EXPECT_EQ(outcome.exit_code, kExitError);
  EXPECT_NE(outcome.error.find("scenario nope not found"), std::string::npos);
}

TEST_F(FollowTest, UnreachableServerIsExitTwo) {
  api_.failures().failOn(1, core::Status(core::StatusCode::kUnavailable,
                                         "POST http://fc.test:8080/v1/runs: connecting: "
                                         "Connection refused"));
  Outcome outcome = follow();
  EXPECT_EQ(outcome.exit_code, kExitError);
  EXPECT_NE(outcome.error.find("Connection refused"), std::string::npos) << outcome.error;
}

TEST_F(FollowTest, ABriefOutageWhileFollowingIsRidden) {
  scriptQueued(7);
  api_.script("GET", "/v1/runs/7", 200, runBody(7, "baseline"));
  api_.script("GET", "/v1/runs/7", 200, finishedBody(7, true));
  const core::Status down(core::StatusCode::kUnavailable, "GET: connecting: Connection refused");
  api_.failures().failOn(3, down);  // calls: 1 POST, 2 GET, 3-4 GET fail, 5 GET
  api_.failures().failOn(4, down);
  Outcome outcome = follow();
  EXPECT_EQ(outcome.exit_code, kExitPassed) << outcome.error;
  EXPECT_EQ(api_.count("GET", "/v1/runs/7"), 4);
}

TEST_F(FollowTest, AServerGoneForGoodEndsTheWaitAfterTheGrace) {
  scriptQueued(7);
  api_.script("GET", "/v1/runs/7", 200, runBody(7, "baseline"));
  const core::Status down(core::StatusCode::kUnavailable, "GET: connecting: Connection refused");
  for (int n = 3; n < 200; ++n) api_.failures().failOn(n, down);
  Outcome outcome = follow();
  EXPECT_EQ(outcome.exit_code, kExitError);
  EXPECT_NE(outcome.error.find("Connection refused (unreachable for 10 s)"), std::string::npos)
      << outcome.error;
  // 10 s of 500 ms polls, not a busy loop and not forever.
  EXPECT_GE(api_.count("GET", "/v1/runs/7"), 20);
  EXPECT_LE(api_.count("GET", "/v1/runs/7"), 23);
}

TEST_F(FollowTest, CtrlCAbortsTheRunOnTheServerAndExitsTwo) {
  scriptQueued(7);
  api_.script("GET", "/v1/runs/7", 200, runBody(7, "baseline"));
  api_.script("GET", "/v1/runs/7", 200, runBody(7, "injecting"));
  api_.script(
      "GET", "/v1/runs/7", 200,
      runBody(7, "aborted",
              {{"error", "aborted on request"},
               {"result", {{"stop", {{"reason", "abort_request"}, {"detail", "POST abort"}}}}}}));
  api_.script("POST", "/v1/runs/7/abort", 202, {{"id", 7}, {"state", "aborting"}});
  api_.on_call = [this](const FakeApiClient::Call& call) {
    if (call.method == "GET" && api_.count("GET", "/v1/runs/7") == 2) interrupted_ = true;
  };
  Outcome outcome = follow();
  EXPECT_EQ(outcome.exit_code, kExitError);
  EXPECT_EQ(outcome.error, "interrupted (Ctrl-C)");
  EXPECT_EQ(api_.count("POST", "/v1/runs/7/abort"), 1);
  ASSERT_EQ(outcome.runs.size(), 1u);
  EXPECT_EQ(outcome.runs[0].state, "aborted");  // waited for the abort to land
  EXPECT_EQ(outcome.runs[0].problem, "interrupted (Ctrl-C)");
  EXPECT_NE(out_.str().find("interrupted (Ctrl-C): aborted run 7 on the server"), std::string::npos)
      << out_.str();
}

TEST_F(FollowTest, CtrlCBeforeSubmittingSubmitsNothing) {
  interrupted_ = true;
  scriptQueued(7);
  Outcome outcome = follow();
  EXPECT_EQ(outcome.exit_code, kExitError);
  EXPECT_TRUE(api_.calls().empty());
  EXPECT_NE(outcome.error.find("before anything was submitted"), std::string::npos);
}

TEST_F(FollowTest, TimeoutAbortsTheRunAndExitsTwo) {
  options_.timeout_s = 2;
  scriptQueued(7);
  api_.script("GET", "/v1/runs/7", 200, runBody(7, "injecting"));
  api_.script("POST", "/v1/runs/7/abort", 202, {{"id", 7}, {"state", "aborting"}});
  Outcome outcome = follow();
  EXPECT_EQ(outcome.exit_code, kExitError);
  EXPECT_EQ(outcome.error, "timed out after 2 s (--timeout)");
  EXPECT_EQ(api_.count("POST", "/v1/runs/7/abort"), 1);
  // Polled for 2 s at 500 ms, then gave the abort at most kAbortSettleMs to show.
  EXPECT_GE(api_.count("GET", "/v1/runs/7"), 4);
  EXPECT_EQ(outcome.runs[0].state, "injecting");  // the fake never finishes it
}

TEST_F(FollowTest, AbortOfAFinishedRunIsSaidPlainly) {
  scriptQueued(7);
  api_.script("GET", "/v1/runs/7", 200, runBody(7, "analysing"));
  api_.script("GET", "/v1/runs/7", 200, finishedBody(7, true));
  api_.script(
      "POST", "/v1/runs/7/abort", 409,
      {{"error", {{"code", "FAILED_PRECONDITION"}, {"message", "run 7 already finished"}}}});
  interrupted_ = false;
  api_.on_call = [this](const FakeApiClient::Call& call) {
    if (call.method == "GET") interrupted_ = true;
  };
  Outcome outcome = follow();
  EXPECT_NE(out_.str().find("run 7 had already finished"), std::string::npos) << out_.str();
  EXPECT_EQ(outcome.exit_code, kExitError);  // interrupted all the same
}

TEST_F(FollowTest, WithoutWaitPrintsTheRunAndExitsZero) {
  options_.wait = false;
  scriptQueued(7);
  Outcome outcome = follow();
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_EQ(api_.calls().size(), 1u);
  EXPECT_NE(out_.str().find("http://fc.test:8080/v1/runs/7"), std::string::npos);
}

json suiteBody(const std::string& state, const json& runs) {
  return {{"id", 3}, {"suite", "expansion-acceptance"}, {"state", state}, {"runs", runs}};
}

TEST_F(FollowTest, SuiteFollowsEachRunInTurn) {
  options_.kind = TargetKind::kSuite;
  options_.name = "expansion-acceptance";
  options_.fabric = "netns-lab";
  api_.script("POST", "/v1/suite-runs", 202, {{"id", 3}, {"state", "queued"}});
  api_.script(
      "GET", "/v1/suite-runs/3", 200,
      suiteBody(
          "running",
          json::array({{{"scenario", "link-flap"}, {"run_id", 10}, {"state", "injecting"}},
                       {{"scenario", "packet-loss"}, {"run_id", nullptr}, {"state", "queued"}}})));
  api_.script(
      "GET", "/v1/suite-runs/3", 200,
      suiteBody(
          "running",
          json::array({{{"scenario", "link-flap"}, {"run_id", 10}, {"state", "passed"}},
                       {{"scenario", "packet-loss"}, {"run_id", 11}, {"state", "injecting"}}})));
  api_.script(
      "GET", "/v1/suite-runs/3", 200,
      suiteBody("passed",
                json::array({{{"scenario", "link-flap"}, {"run_id", 10}, {"state", "passed"}},
                             {{"scenario", "packet-loss"}, {"run_id", 11}, {"state", "passed"}}})));
  api_.script("GET", "/v1/runs/10", 200, runBody(10, "injecting"));
  api_.script("GET", "/v1/runs/10", 200, finishedBody(10, true));
  json packet_loss = finishedBody(11, true);
  packet_loss["scenario"] = "packet-loss";
  api_.script("GET", "/v1/runs/11", 200, runBody(11, "injecting", {{"scenario", "packet-loss"}}));
  api_.script("GET", "/v1/runs/11", 200, packet_loss);

  Outcome outcome = follow();
  EXPECT_EQ(outcome.exit_code, kExitPassed) << outcome.error;
  EXPECT_TRUE(outcome.suite);
  EXPECT_EQ(outcome.suite_run_id, 3);
  EXPECT_EQ(api_.calls()[0].body,
            (json{{"suite", "expansion-acceptance"}, {"fabric", "netns-lab"}}));
  ASSERT_EQ(outcome.runs.size(), 2u);
  EXPECT_EQ(outcome.runs[0].scenario, "link-flap");
  EXPECT_EQ(outcome.runs[0].state, "passed");
  EXPECT_EQ(outcome.runs[1].scenario, "packet-loss");
  EXPECT_EQ(outcome.runs[1].id, 11);
  EXPECT_EQ(outcome.runs[1].state, "passed");
  EXPECT_NE(out_.str().find("packet-loss started as run 11"), std::string::npos) << out_.str();
}

TEST_F(FollowTest, SuiteWithAFailureAndASkippedScenarioExitsOne) {
  options_.kind = TargetKind::kSuite;
  options_.name = "expansion-acceptance";
  api_.script("POST", "/v1/suite-runs", 202, {{"id", 3}, {"state", "queued"}});
  api_.script(
      "GET", "/v1/suite-runs/3", 200,
      suiteBody(
          "failed",
          json::array({{{"scenario", "link-flap"}, {"run_id", 10}, {"state", "failed"}},
                       {{"scenario", "packet-loss"}, {"run_id", nullptr}, {"state", "skipped"}}})));
  api_.script("GET", "/v1/runs/10", 200, finishedBody(10, false));
  Outcome outcome = follow();
  EXPECT_EQ(outcome.exit_code, kExitFailed) << outcome.error;
  ASSERT_EQ(outcome.runs.size(), 2u);
  EXPECT_EQ(outcome.runs[1].state, "skipped");
  EXPECT_EQ(outcome.runs[1].id, 0);
}

TEST_F(FollowTest, SuiteCtrlCAbortsTheSuiteRun) {
  options_.kind = TargetKind::kSuite;
  options_.name = "expansion-acceptance";
  api_.script("POST", "/v1/suite-runs", 202, {{"id", 3}, {"state", "queued"}});
  api_.script(
      "GET", "/v1/suite-runs/3", 200,
      suiteBody(
          "running",
          json::array({{{"scenario", "link-flap"}, {"run_id", 10}, {"state", "injecting"}}})));
  api_.script(
      "GET", "/v1/suite-runs/3", 200,
      suiteBody("aborted",
                json::array({{{"scenario", "link-flap"}, {"run_id", 10}, {"state", "aborted"}}})));
  api_.script("GET", "/v1/runs/10", 200, runBody(10, "injecting"));
  api_.script("GET", "/v1/runs/10", 200, runBody(10, "aborted"));
  api_.script("POST", "/v1/suite-runs/3/abort", 202, {{"id", 3}});
  api_.on_call = [this](const FakeApiClient::Call& call) {
    if (call.target == "/v1/runs/10") interrupted_ = true;
  };
  Outcome outcome = follow();
  EXPECT_EQ(outcome.exit_code, kExitError);
  EXPECT_EQ(api_.count("POST", "/v1/suite-runs/3/abort"), 1);
  EXPECT_EQ(api_.count("POST", "/v1/runs/10/abort"), 0);
  EXPECT_EQ(outcome.runs[0].state, "aborted");
}

TEST(ProgressPrinter, PlainLinesOnStateChangeAndEveryFiveSeconds) {
  std::ostringstream text;
  ProgressPrinter printer(text, false, 5000);
  const json baseline = {{"state", "baseline"}};
  const json injecting = {{"state", "injecting"}};
  printer.update("run 1 x", baseline, 0, 0);
  printer.update("run 1 x", baseline, 500, 500);     // same state: quiet
  printer.update("run 1 x", baseline, 4999, 4999);   // still quiet
  printer.update("run 1 x", baseline, 5000, 5000);   // 5 s later: a line
  printer.update("run 1 x", injecting, 5500, 5500);  // state change: a line
  const std::string out = text.str();
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3) << out;
  EXPECT_EQ(out.find('\r'), std::string::npos);
}

TEST(ProgressPrinter, OnATerminalOneLineIsRewritten) {
  std::ostringstream text;
  ProgressPrinter printer(text, true);
  printer.update("run 1 x", {{"state", "baseline"}}, 0, 0);
  printer.update("run 1 x", {{"state", "baseline"}}, 500, 500);
  printer.breakLine();
  printer.breakLine();  // nothing pending: no second newline
  EXPECT_EQ(text.str(), "\r\x1b[Krun 1 x  baseline  0.0 s\r\x1b[Krun 1 x  baseline  0.5 s\n");
}

TEST(ProgressPrinter, Describe) {
  struct Case {
    json run;
    int64_t elapsed_ms;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{{"state", "queued"}}, 1200, "queued  1.2 s"},
      {{{"state", "injecting"},
        {"live",
         {{"elapsed_ms", 4300}, {"last_busbw_gbps", 0.5}, {"active_faults", json::array({1, 2})}}}},
       99999,
       "injecting  4.3 s  busbw 0.500 GB/s  faults 2"},
      {{{"state", "passed"}, {"score", 87.25}, {"live", nullptr}},
       20000,
       "passed  20.0 s  score 87.2"},
      {json::object(), 0, "?  0.0 s"},
      {{{"state", "failed"}, {"score", 10.0}, {"duration_ms", 7100}},
       31000,
       "failed  7.1 s  score 10.0"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ProgressPrinter::describe(c.run, c.elapsed_ms), c.expected) << c.run.dump();
  }
}

}  // namespace
}  // namespace fabric_chaos::client
