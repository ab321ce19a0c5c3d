// The reports of `fabric-chaos run`: verdict blocks, JUnit XML (read back with a small XML
// reader, counts checked, and validated with `xmllint --schema tests/client/junit.xsd`) and the
// JSON report, over table-driven outcomes.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "client/follow.h"
#include "client/report.h"
#include "tests/client/junit_check.h"

namespace fabric_chaos::client {
namespace {

using nlohmann::json;
using testing::XmlNode;
using testing::XmlReader;

json gate(const std::string& name, bool passed, const std::string& detail) {
  return {{"gate", name}, {"passed", passed}, {"detail", detail}};
}

json step(int index, double recover_ms, double retained) {
  return {{"step", index},
          {"fault_start_ms", 1000.0 + index * 3000},
          {"fault_end_ms", 2500.0 + index * 3000},
          {"baseline_busbw_gbps", 2.0},
          {"worst_busbw_gbps", 0.0},
          {"retained", retained},
          {"time_to_detect_ms", 12.5},
          {"time_to_recover_ms", recover_ms},
          {"longest_stall_ms", 1400.0},
          {"time_to_first_progress_ms", 1390.0},
          {"survived", true},
          {"recovered", true},
          {"score", 80.0}};
}

FollowedRun finishedRun(int64_t id, const std::string& state, const json& gates,
                        const json& steps) {
  FollowedRun run;
  run.id = id;
  run.scenario = "short-flap";
  run.state = state;
  run.url = "http://fc.test:8080/v1/runs/" + std::to_string(id);
  run.body = {{"id", id},
              {"scenario", "short-flap"},
              {"fabric", "netns-lab"},
              {"state", state},
              {"score", 80.0},
              {"started_ms", 1000},
              {"finished_ms", 13500},
              {"error", ""},
              {"result",
               {{"analysis",
                 {{"baseline_busbw_gbps", 2.0}, {"steps", steps}, {"score", 80.0}, {"note", ""}}},
                {"gates", gates},
                {"passed", state == "passed"}}}};
  return run;
}

Outcome single(FollowedRun run) {
  Outcome o;
  o.name = run.scenario;
  o.runs.push_back(std::move(run));
  settleVerdict(o);
  return o;
}

XmlNode parseJunit(const std::string& xml) {
  XmlReader reader;
  auto root = reader.parse(xml);
  EXPECT_TRUE(root.has_value()) << reader.error() << "\n" << xml;
  if (!root) return XmlNode{};
  EXPECT_EQ(testing::junitCountsProblem(*root), "") << xml;
  return *root;
}

// The schema check: xmllint is installed by deploy/install-deps.sh (libxml2-utils). Without it
// the test fails in CI and is skipped elsewhere, saying so (the structural checks above still ran).
void expectSchemaValid(const std::string& xml) {
  const std::string xsd = std::string(FC_SOURCE_DIR_FALLBACK) + "/tests/client/junit.xsd";
  const char* source = std::getenv("FC_SOURCE_DIR");
  const std::string schema =
      source != nullptr ? std::string(source) + "/tests/client/junit.xsd" : xsd;
  char path[] = "/tmp/fc-junit-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << xml;
  auto check = testing::validateJunitSchema(path, schema);
  std::filesystem::remove(path);
  if (!check.ran) {
    const char* ci = std::getenv("CI");
    if (ci != nullptr && std::string(ci) == "true") {
      ADD_FAILURE() << "xmllint is missing (apt-get install libxml2-utils): the JUnit schema "
                       "check cannot run";
      return;
    }
    GTEST_SKIP() << "xmllint is missing (apt-get install libxml2-utils): the JUnit schema check "
                    "did not run";
  }
  EXPECT_TRUE(check.valid) << check.output << "\n" << xml;
}

TEST(Junit, PassingRunHasNoFailureAndCarriesTheMetrics) {
  Outcome o =
      single(finishedRun(12, "passed", json::array({gate("min_score", true, "score 80.0 >= 0.0")}),
                         json::array({step(0, 150.0, 0.4)})));
  const std::string xml = junitXml(o);
  XmlNode suite = parseJunit(xml);
  expectSchemaValid(xml);
  EXPECT_EQ(suite.attr("name"), "short-flap");
  EXPECT_EQ(suite.attr("tests"), "2");
  EXPECT_EQ(suite.attr("failures"), "0");
  EXPECT_EQ(suite.attr("errors"), "0");
  EXPECT_EQ(suite.attr("time"), "12.500");
  EXPECT_EQ(suite.property("verdict"), "passed");
  EXPECT_EQ(suite.property("exit_code"), "0");
  auto cases = suite.all("testcase");
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0]->attr("classname"), "fabric-chaos.short-flap");
  EXPECT_EQ(cases[0]->attr("name"), "short-flap");
  EXPECT_EQ(cases[0]->attr("time"), "12.500");
  EXPECT_EQ(cases[0]->first("failure"), nullptr);
  EXPECT_EQ(cases[0]->property("run_id"), "12");
  EXPECT_EQ(cases[0]->property("url"), "http://fc.test:8080/v1/runs/12");
  EXPECT_EQ(cases[0]->property("score"), "80");
  EXPECT_EQ(cases[0]->property("baseline_busbw_gbps"), "2");
  EXPECT_EQ(cases[0]->property("gate.min_score"), "passed: score 80.0 >= 0.0");
  EXPECT_EQ(cases[0]->property("step.0.time_to_recover_ms"), "150");
  EXPECT_EQ(cases[0]->property("step.0.retained"), "0.4");
  EXPECT_EQ(cases[0]->property("step.0.time_to_first_progress_ms"), "1390");
  EXPECT_EQ(cases[1]->attr("name"), "short-flap/step-0");
  EXPECT_EQ(cases[1]->attr("time"), "1.500");
  EXPECT_EQ(cases[1]->property("time_to_detect_ms"), "12.5");
  EXPECT_EQ(cases[1]->first("failure"), nullptr);
}

TEST(Junit, PerStepGateFailsTheRunAndOnlyTheStepsItNames) {
  Outcome o = single(
      finishedRun(13, "failed",
                  json::array({gate("min_score", true, "score 80.0 >= 0.0"),
                               gate("max_recovery_ms", false, "step 1 recovered in 1.2 s > 1 ms"),
                               gate("require_survival", true, "every rank survived every step")}),
                  json::array({step(0, 0.5, 0.4), step(1, 1200, 0.3)})));
  EXPECT_EQ(o.exit_code, 1);
  const std::string xml = junitXml(o);
  XmlNode suite = parseJunit(xml);
  expectSchemaValid(xml);
  EXPECT_EQ(suite.attr("tests"), "3");
  EXPECT_EQ(suite.attr("failures"), "2");
  auto cases = suite.all("testcase");
  ASSERT_EQ(cases.size(), 3u);
  const XmlNode* failure = cases[0]->first("failure");
  ASSERT_NE(failure, nullptr);
  EXPECT_EQ(failure->attr("message"), "max_recovery_ms: step 1 recovered in 1.2 s > 1 ms");
  EXPECT_EQ(failure->attr("type"), "gate");
  EXPECT_NE(failure->text.find("gate max_recovery_ms   FAILED"), std::string::npos)
      << failure->text;
  EXPECT_EQ(cases[1]->attr("name"), "short-flap/step-0");
  EXPECT_EQ(cases[1]->first("failure"), nullptr);
  EXPECT_EQ(cases[2]->attr("name"), "short-flap/step-1");
  ASSERT_NE(cases[2]->first("failure"), nullptr);
  EXPECT_EQ(cases[2]->first("failure")->attr("message"),
            "max_recovery_ms: step 1 recovered in 1.2 s > 1 ms");
}

TEST(Junit, ScoreGateFailsOnlyTheRunTestcase) {
  Outcome o = single(finishedRun(14, "failed",
                                 json::array({gate("min_score", false, "score 80.0 < 100.0")}),
                                 json::array({step(0, 100, 0.5)})));
  XmlNode suite = parseJunit(junitXml(o));
  auto cases = suite.all("testcase");
  ASSERT_EQ(cases.size(), 2u);
  ASSERT_NE(cases[0]->first("failure"), nullptr);
  EXPECT_EQ(cases[0]->first("failure")->attr("message"), "min_score: score 80.0 < 100.0");
  EXPECT_EQ(cases[1]->first("failure"), nullptr);
}

TEST(Junit, ErroredAbortedAndUnfinishedRunsAreErrors) {
  struct Case {
    std::string state;
    std::string error;
    std::string problem;
    std::string expected_message;
  };
  const std::vector<Case> cases = {
      {"error", "agent h1: connection refused", "", "run error: agent h1: connection refused"},
      {"aborted", "aborted on request", "interrupted (Ctrl-C)",
       "run aborted: aborted on request; interrupted (Ctrl-C)"},
      {"injecting", "", "timed out after 5 s (--timeout)",
       "run injecting: timed out after 5 s (--timeout)"},
  };
  for (const Case& c : cases) {
    FollowedRun run = finishedRun(15, c.state, json::array(), json::array());
    run.body["error"] = c.error;
    run.body["result"] = json::object();
    run.problem = c.problem;
    Outcome o = single(run);
    if (!c.problem.empty()) o.error = c.problem;
    settleVerdict(o);
    EXPECT_EQ(o.exit_code, 2) << c.state;
    const std::string xml = junitXml(o);
    XmlNode suite = parseJunit(xml);
    expectSchemaValid(xml);
    EXPECT_EQ(suite.attr("errors"), "1") << c.state;
    auto testcases = suite.all("testcase");
    ASSERT_EQ(testcases.size(), 1u);
    const XmlNode* error = testcases[0]->first("error");
    ASSERT_NE(error, nullptr) << c.state;
    EXPECT_EQ(error->attr("message"), c.expected_message);
    EXPECT_EQ(error->attr("type"), c.state);
  }
}

TEST(Junit, SuiteWithASkippedScenario) {
  Outcome o;
  o.suite = true;
  o.name = "expansion-acceptance";
  o.suite_run_id = 3;
  o.suite_body = {{"id", 3}, {"state", "failed"}};
  o.runs.push_back(finishedRun(
      20, "failed", json::array({gate("min_retained", false, "step 0 retained 0.10 < 0.50")}),
      json::array({step(0, 100, 0.1)})));
  FollowedRun skipped;
  skipped.scenario = "packet-loss";
  skipped.state = "skipped";
  o.runs.push_back(skipped);
  settleVerdict(o);
  EXPECT_EQ(o.exit_code, 1);
  const std::string xml = junitXml(o);
  XmlNode suite = parseJunit(xml);
  expectSchemaValid(xml);
  EXPECT_EQ(suite.attr("name"), "expansion-acceptance");
  EXPECT_EQ(suite.attr("tests"), "3");
  EXPECT_EQ(suite.attr("failures"), "2");
  EXPECT_EQ(suite.attr("skipped"), "1");
  EXPECT_EQ(suite.property("suite_run_id"), "3");
  EXPECT_EQ(suite.property("suite_state"), "failed");
  for (const XmlNode* c : suite.all("testcase")) {
    EXPECT_EQ(c->attr("classname"), "fabric-chaos.expansion-acceptance");
  }
  EXPECT_EQ(suite.all("testcase")[2]->attr("name"), "packet-loss");
}

TEST(Junit, ClientErrorWithoutAnyRunStillWritesAValidReport) {
  Outcome o;
  o.name = "link-flap";
  o.error = "starting scenario link-flap: HTTP 401 UNAUTHENTICATED: unknown token";
  settleVerdict(o);
  const std::string xml = junitXml(o);
  XmlNode suite = parseJunit(xml);
  expectSchemaValid(xml);
  EXPECT_EQ(suite.attr("tests"), "0");
  EXPECT_EQ(suite.property("error"), o.error);
  ASSERT_NE(suite.first("system-err"), nullptr);
}

TEST(Junit, HostileTextIsEscaped) {
  FollowedRun run = finishedRun(
      16, "failed", json::array({gate("min_score", false, "a <b> & \"c\" 'd'\nnext\x01line")}),
      json::array());
  run.scenario = "x<&>\"";
  Outcome o = single(run);
  const std::string xml = junitXml(o);
  XmlNode suite = parseJunit(xml);
  expectSchemaValid(xml);
  EXPECT_EQ(suite.all("testcase")[0]->attr("name"), "x<&>\"");
  EXPECT_EQ(suite.all("testcase")[0]->first("failure")->attr("message"),
            "min_score: a <b> & \"c\" 'd'\nnext\xEF\xBF\xBDline");
}

TEST(XmlEscape, Table) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"plain", "plain"},           {"a&b", "a&amp;b"},
      {"<x>", "&lt;x&gt;"},         {"\"'", "&quot;&apos;"},
      {"a\nb\tc", "a&#10;b&#9;c"},  {std::string("nul\0x", 5), "nul\xEF\xBF\xBDx"},
      {"\x1b[K", "\xEF\xBF\xBD[K"}, {"ünï", "ünï"},
  };
  for (const auto& [in, out] : cases) EXPECT_EQ(xmlEscape(in), out) << in;
}

TEST(StepsNamedIn, Table) {
  const std::vector<std::pair<std::string, std::vector<int>>> cases = {
      {"step 0 recovered in 1.2 s > 1 ms", {0}},
      {"step 1 did not recover within the recovery window; step 3 recovered in 2 s > 1 s", {1, 3}},
      {"step 2 retained 0.10 < 0.50; step 2: a rank did not survive the fault", {2}},
      {"every step recovered within 1 s (slowest 0.2 s)", {}},
      {"no fault steps to recover from", {}},
      {"substep 4", {}},
  };
  for (const auto& [detail, steps] : cases) EXPECT_EQ(stepsNamedIn(detail), steps) << detail;
}

TEST(VerdictBlock, Table) {
  FollowedRun failed =
      finishedRun(13, "failed",
                  json::array({gate("min_score", true, "score 80.0 >= 0.0"),
                               gate("max_recovery_ms", false, "step 1 recovered in 1.2 s > 1 ms")}),
                  json::array());
  failed.body["result"]["stop"] = {{"reason", "busbw_below"}, {"detail", "busbw 0 for 2 s"}};
  EXPECT_EQ(verdictBlock(failed),
            "run 13  short-flap  failed  score 80.0\n"
            "  gate min_score         passed  score 80.0 >= 0.0\n"
            "  gate max_recovery_ms   FAILED  step 1 recovered in 1.2 s > 1 ms\n"
            "  stop: busbw_below (busbw 0 for 2 s)\n"
            "  http://fc.test:8080/v1/runs/13\n");

  FollowedRun errored;
  errored.id = 4;
  errored.scenario = "link-flap";
  errored.state = "aborted";
  errored.url = "http://h/v1/runs/4";
  errored.problem = "interrupted (Ctrl-C)";
  errored.body = {{"state", "aborted"}, {"error", "aborted on request"}, {"score", nullptr}};
  EXPECT_EQ(verdictBlock(errored),
            "run 4  link-flap  aborted\n"
            "  error: aborted on request\n"
            "  client: interrupted (Ctrl-C)\n"
            "  http://h/v1/runs/4\n");

  FollowedRun skipped;
  skipped.scenario = "packet-loss";
  skipped.state = "skipped";
  EXPECT_EQ(verdictBlock(skipped), "packet-loss  skipped  (never started)\n");
}

TEST(VerdictReport, EndsWithTheVerdictLine) {
  Outcome o = single(finishedRun(12, "passed", json::array(), json::array()));
  const std::string text = verdictReport(o);
  EXPECT_NE(text.find("run 12  short-flap  passed"), std::string::npos);
  EXPECT_EQ(text.substr(text.size() - 25), "verdict: passed (exit 0)\n");
}

TEST(JsonReport, CarriesTheFullRunBodies) {
  Outcome o = single(finishedRun(
      13, "failed", json::array({gate("min_score", false, "score 80.0 < 90.0")}), json::array()));
  json report = jsonReport(o);
  EXPECT_EQ(report["verdict"], "failed");
  EXPECT_EQ(report["exit_code"], 1);
  EXPECT_FALSE(report.contains("error"));
  ASSERT_EQ(report["runs"].size(), 1u);
  EXPECT_EQ(report["runs"][0], o.runs[0].body);

  Outcome refused;
  refused.name = "x";
  refused.error = "HTTP 403 PERMISSION_DENIED: viewer may not start runs";
  settleVerdict(refused);
  report = jsonReport(refused);
  EXPECT_EQ(report, (json{{"verdict", "error"},
                          {"exit_code", 2},
                          {"error", refused.error},
                          {"runs", json::array()}}));
}

}  // namespace
}  // namespace fabric_chaos::client
