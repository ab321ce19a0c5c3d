// The CI client end to end: `fabric-chaos serve --with-lab 2` on a real namespace lab, and the
// real binary's `fabric-chaos run` against it, with a passing gate (exit 0, JUnit without a
// failure), a failing gate (exit 1, a <failure> naming it), a bad token (exit 2, the server's 401),
// Ctrl-C (the run is aborted on the server, exit 2) and suites (exit code = suite verdict). The
// JUnit is read back and validated with xmllint against tests/client/junit.xsd.

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <iostream>
#include <thread>

#include "tests/client/junit_check.h"
#include "tests/privileged/support.h"

namespace fabric_chaos::testing {
namespace {

using nlohmann::json;

// One 500 ms link flap between short baseline and recovery windows: a run takes a few seconds.
// The flapped host re-resolves ARP on its 1 s probe timer after the link returns (docs/faults.md,
// link_flap), so the recovery window leaves 3 s: with 1.5 s a slow machine once saw no iteration
// end after the flap and the run failed require_survival.
json shortFlap(const std::string& name, int down_ms = 500) {
  return {{"version", 1},
          {"name", name},
          {"workload", {{"message_bytes", 262144}, {"compute_ms", 5}, {"peer_timeout_ms", 10000}}},
          {"baseline_ms", 1500},
          {"steps",
           {{{"kind", "link_flap"},
             {"target", {{"host", "h1"}, {"side", "switch"}}},
             {"at_ms", 0},
             {"params", {{"down_ms", down_ms}, {"up_ms", 500}, {"count", 1}}}}}},
          {"recovery_ms", 3000},
          {"gates", {{"require_survival", true}}}};
}

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

class RunCli : public ServeWithLabTest {
 protected:
  RunCli() : ServeWithLabTest(2) {}

  void SetUp() override {
    ServeWithLabTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_FALSE(serve_->token().empty())
        << "serve wrote no admin token to " << serve_->tokenFile() << ":\n"
        << serve_->output();
    std::ofstream(dir_ + "/short.json") << shortFlap("cli-short-flap").dump(2);
  }

  std::string server() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // `fabric-chaos run ARGS` with stdout and stderr together.
  CommandOutput run(const std::string& args) {
    const std::string command = quote(std::getenv("FC_BINARY")) + " run --server " + server() +
                                " " + args + " 2>&1 </dev/null";
    CommandOutput out = runShell(command);
    std::cout << "$ fabric-chaos run " << args << "\n"
              << out.out << "(exit " << out.exit_code << ")\n";
    return out;
  }

  std::string auth() const { return "--token-file " + quote(serve_->tokenFile()); }

  XmlNode junit(const std::string& path) {
    const std::string text = readWholeFile(path);
    XmlReader reader;
    auto root = reader.parse(text);
    EXPECT_TRUE(root.has_value()) << reader.error() << "\n" << text;
    if (!root) return XmlNode{};
    EXPECT_EQ(junitCountsProblem(*root), "") << text;
    expectSchemaValid(path, text);
    return *root;
  }

  // xmllint comes from libxml2-utils (deploy/install-deps.sh). Without it the test fails in CI
  // and is skipped elsewhere, saying so; the reading-back checks still run either way.
  void expectSchemaValid(const std::string& path, const std::string& text) {
    const std::string xsd = std::string(std::getenv("FC_SOURCE_DIR")) + "/tests/client/junit.xsd";
    SchemaCheck schema = validateJunitSchema(path, xsd);
    if (!schema.ran) {
      const char* ci = std::getenv("CI");
      if (ci != nullptr && std::string(ci) == "true") {
        ADD_FAILURE() << "xmllint is missing (libxml2-utils): the JUnit schema check cannot run";
        return;
      }
      GTEST_SKIP() << "xmllint is missing (apt-get install libxml2-utils): the JUnit schema "
                      "check did not run";
    }
    EXPECT_TRUE(schema.valid) << schema.output << "\n" << text;
  }

  // A run that did not pass: its result and events, which say which rank stopped and when.
  std::string whyNotPassed(const json& run_body) {
    if (run_body.value("state", "") == "passed") return "";
    const std::string id = std::to_string(run_body.value("id", int64_t{0}));
    return "result: " + run_body.value("result", json::object()).dump(2) +
           "\nevents: " + httpRequest(port_, "GET", "/v1/runs/" + id + "/events").body;
  }

  json jsonFile(const std::string& path) {
    return json::parse(readWholeFile(path), nullptr, /*allow_exceptions=*/false);
  }
};

TEST_F(RunCli, PassingGateExitsZeroWithACleanJunit) {
  auto out = run(auth() + " --file " + quote(dir_ + "/short.json") +
                 " --gate min_score=0 --wait --junit " + quote(dir_ + "/pass.xml") + " --json " +
                 quote(dir_ + "/pass.json") + " --timeout 90");
  EXPECT_EQ(out.exit_code, 0) << out.out;
  EXPECT_EQ(out.out.find(serve_->token()), std::string::npos) << "the token was printed";
  EXPECT_NE(out.out.find("verdict: passed (exit 0)"), std::string::npos);
  EXPECT_NE(out.out.find("gate min_score"), std::string::npos);

  XmlNode suite = junit(dir_ + "/pass.xml");
  EXPECT_EQ(suite.attr("name"), "cli-short-flap");
  EXPECT_EQ(suite.attr("failures"), "0");
  EXPECT_EQ(suite.attr("errors"), "0");
  auto cases = suite.all("testcase");
  ASSERT_EQ(cases.size(), 2u) << "the run and its one fault step";
  EXPECT_EQ(cases[0]->attr("classname"), "fabric-chaos.cli-short-flap");
  EXPECT_EQ(cases[0]->attr("name"), "cli-short-flap");
  EXPECT_GT(std::stod(cases[0]->attr("time")), 3.0);  // baseline + flap + recovery
  EXPECT_EQ(cases[1]->attr("name"), "cli-short-flap/step-0");
  EXPECT_TRUE(cases[0]->property("score").has_value());
  EXPECT_TRUE(cases[0]->property("baseline_busbw_gbps").has_value());
  EXPECT_TRUE(cases[1]->property("time_to_recover_ms").has_value());

  json report = jsonFile(dir_ + "/pass.json");
  EXPECT_EQ(report["verdict"], "passed");
  EXPECT_EQ(report["exit_code"], 0);
  ASSERT_EQ(report["runs"].size(), 1u);
  const json& run_body = report["runs"][0];
  EXPECT_EQ(run_body["state"], "passed") << whyNotPassed(run_body);
  EXPECT_EQ(cases[0]->property("run_id"), std::to_string(run_body["id"].get<int64_t>()));
  // The gate went to the server: the stored document carries it.
  EXPECT_EQ(run_body["scenario_document"]["gates"]["min_score"], 0.0) << run_body.dump(2);
}

TEST_F(RunCli, FailingGateExitsOneWithAFailureNamingIt) {
  auto out =
      run(auth() + " --file " + quote(dir_ + "/short.json") +
          " --gate min_score=100 --gate max_recovery_ms=1 --wait --junit " +
          quote(dir_ + "/fail.xml") + " --json " + quote(dir_ + "/fail.json") + " --timeout 90");
  EXPECT_EQ(out.exit_code, 1) << out.out;
  EXPECT_NE(out.out.find("FAILED"), std::string::npos);
  EXPECT_NE(out.out.find("verdict: failed (exit 1)"), std::string::npos);

  json report = jsonFile(dir_ + "/fail.json");
  EXPECT_EQ(report["verdict"], "failed");
  ASSERT_EQ(report["runs"].size(), 1u);
  EXPECT_EQ(report["runs"][0]["state"], "failed");
  std::vector<std::string> failed_gates;
  for (const json& g : report["runs"][0]["result"]["gates"]) {
    if (!g["passed"].get<bool>()) failed_gates.push_back(g["gate"].get<std::string>());
  }
  ASSERT_FALSE(failed_gates.empty()) << report.dump(2);

  XmlNode suite = junit(dir_ + "/fail.xml");
  EXPECT_NE(suite.attr("failures"), "0");
  const XmlNode* failure = suite.all("testcase")[0]->first("failure");
  ASSERT_NE(failure, nullptr);
  for (const std::string& gate : failed_gates) {
    EXPECT_NE(failure->attr("message").find(gate), std::string::npos)
        << gate << " not in " << failure->attr("message");
  }
}

TEST_F(RunCli, BadTokenExitsTwoWithTheServersMessage) {
  auto out = run("--token fct_not_a_real_token --scenario link-flap --wait --junit " +
                 quote(dir_ + "/refused.xml"));
  EXPECT_EQ(out.exit_code, 2) << out.out;
  EXPECT_NE(out.out.find("HTTP 401 UNAUTHENTICATED"), std::string::npos) << out.out;
  EXPECT_EQ(out.out.find("fct_not_a_real_token"), std::string::npos) << "the token was printed";
  XmlNode suite = junit(dir_ + "/refused.xml");
  EXPECT_NE(suite.property("error").value_or("").find("401"), std::string::npos);

  // Bad usage and an unreachable server are exit 2 as well.
  EXPECT_EQ(run(auth() + " --wait").exit_code, 2);
  auto unreachable = runShell(quote(std::getenv("FC_BINARY")) +
                              " run --server http://127.0.0.1:1 --scenario link-flap --wait 2>&1");
  EXPECT_EQ(unreachable.exit_code, 2) << unreachable.out;
  EXPECT_NE(unreachable.out.find("127.0.0.1:1"), std::string::npos) << unreachable.out;
}

TEST_F(RunCli, CtrlCAbortsTheRunOnTheServerAndExitsTwo) {
  std::ofstream(dir_ + "/long.json") << shortFlap("cli-long-flap", 20000).dump(2);
  ChildProcess cli({std::getenv("FC_BINARY"), "run", "--server", server(), "--token-file",
                    serve_->tokenFile(), "--file", dir_ + "/long.json", "--wait", "--json",
                    dir_ + "/abort.json"});
  // Plain progress lines (stdout is a pipe): "run N cli-long-flap  injecting  ...".
  const int id = cli.waitForPort(std::regex(R"(run (\d+) cli-long-flap  injecting)"), 60000, 50);
  ASSERT_GT(id, 0) << cli.output();
  const int exit_code = cli.signalAndWait(SIGINT, 30000, true);
  EXPECT_EQ(exit_code, 2) << cli.output();
  EXPECT_NE(cli.output().find("interrupted (Ctrl-C): aborted run " + std::to_string(id)),
            std::string::npos)
      << cli.output();
  // A connection closed without a reply has been seen here once in CI (status 0): retried, and
  // logged so that the next occurrence says what the transport saw.
  HttpReply reply = httpRequest(port_, "GET", "/v1/runs/" + std::to_string(id));
  for (int attempt = 1; reply.status == 0 && attempt < 3; ++attempt) {
    std::cerr << "GET /v1/runs/" << id << " had no reply: " << reply.body << "; retrying\n";
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    reply = httpRequest(port_, "GET", "/v1/runs/" + std::to_string(id));
  }
  const json run_body = reply.json();
  ASSERT_TRUE(run_body.is_object())
      << "GET /v1/runs/" << id << ": " << reply.status << " " << reply.body << "\n"
      << cli.output() << "\nserve:\n"
      << serve_->output();
  EXPECT_EQ(run_body["state"], "aborted") << run_body.dump(2);
  const json report = jsonFile(dir_ + "/abort.json");
  ASSERT_TRUE(report.is_object()) << "abort.json: " << readWholeFile(dir_ + "/abort.json") << "\n"
                                  << cli.output();
  EXPECT_EQ(report["verdict"], "error");
  EXPECT_EQ(report["exit_code"], 2);
}

TEST_F(RunCli, SuiteOfAPassAndAFailExitsOne) {
  json passing = shortFlap("cli-suite-pass");
  passing["gates"]["min_score"] = 0;
  json failing = shortFlap("cli-suite-fail");
  failing["gates"]["min_score"] = 100;
  for (const json& doc : {passing, failing}) {
    auto reply =
        httpRequest(port_, "PUT", "/v1/scenarios/" + doc["name"].get<std::string>(), doc.dump());
    ASSERT_TRUE(reply.status == 200 || reply.status == 201) << reply.status << " " << reply.body;
  }
  const json suite = {{"name", "cli-acceptance"},
                      {"description", "CI client test"},
                      {"scenarios", {"cli-suite-pass", "cli-suite-fail"}}};
  auto put = httpRequest(port_, "PUT", "/v1/suites/cli-acceptance", suite.dump());
  ASSERT_TRUE(put.status == 200 || put.status == 201)
      << "the suites endpoint is missing or refused the suite (PUT /v1/suites/NAME): " << put.status
      << " " << put.body;

  auto out = run(auth() + " --suite cli-acceptance --wait --junit " + quote(dir_ + "/suite.xml") +
                 " --json " + quote(dir_ + "/suite.json") + " --timeout 120");
  EXPECT_EQ(out.exit_code, 1) << out.out;
  json report = jsonFile(dir_ + "/suite.json");
  ASSERT_TRUE(report.is_object()) << out.out;
  EXPECT_EQ(report["verdict"], "failed");
  EXPECT_EQ(report["suite_run"].value("state", ""), "failed") << report.dump(2);
  ASSERT_EQ(report["runs"].size(), 2u) << report.dump(2);
  EXPECT_EQ(report["runs"][0]["state"], "passed");
  EXPECT_EQ(report["runs"][1]["state"], "failed");

  XmlNode xml = junit(dir_ + "/suite.xml");
  EXPECT_EQ(xml.attr("name"), "cli-acceptance");
  auto cases = xml.all("testcase");
  ASSERT_EQ(cases.size(), 4u);  // two runs, one fault step each
  EXPECT_EQ(cases[0]->attr("classname"), "fabric-chaos.cli-acceptance");
  EXPECT_EQ(cases[0]->attr("name"), "cli-suite-pass");
  EXPECT_EQ(cases[0]->first("failure"), nullptr);
  EXPECT_EQ(cases[2]->attr("name"), "cli-suite-fail");
  ASSERT_NE(cases[2]->first("failure"), nullptr);
  EXPECT_NE(cases[2]->first("failure")->attr("message").find("min_score"), std::string::npos);
}

// The built-in suite (link-flap, then packet-loss; about 30 s): whatever its verdict on this
// machine, the exit code and the reports agree with the server's own records. The suite verdict
// is passed or failed (docs/api.md); a failed suite one of whose runs ended in error is exit 2,
// not 1: the pipeline must tell "a gate failed" from "the test could not be done".
TEST_F(RunCli, ExpansionAcceptanceExitCodeMatchesTheSuiteVerdict) {
  auto out =
      run(auth() + " --suite expansion-acceptance --wait --junit " + quote(dir_ + "/ea.xml") +
          " --json " + quote(dir_ + "/ea.json") + " --timeout 180");
  json report = jsonFile(dir_ + "/ea.json");
  ASSERT_TRUE(report.is_object()) << out.out;
  const int64_t suite_run_id = report["suite_run"].value("id", int64_t{0});
  ASSERT_GT(suite_run_id, 0) << report.dump(2);

  // The server's own records, read independently of the client.
  json server_side =
      httpRequest(port_, "GET", "/v1/suite-runs/" + std::to_string(suite_run_id)).json();
  const std::string state = server_side.value("state", "");
  ASSERT_TRUE(state == "passed" || state == "failed") << server_side.dump(2);
  ASSERT_EQ(server_side["runs"].size(), 2u) << server_side.dump(2);
  bool some_run_errored = false;
  for (const json& entry : server_side["runs"]) {
    ASSERT_TRUE(entry["run_id"].is_number()) << server_side.dump(2);
    json run_body =
        httpRequest(port_, "GET", "/v1/runs/" + std::to_string(entry["run_id"].get<int64_t>()))
            .json();
    const std::string run_state = run_body.value("state", "");
    if (run_state != "passed" && run_state != "failed") some_run_errored = true;
  }
  const int expected_exit = state == "passed" ? 0 : some_run_errored ? 2 : 1;
  const std::string expected_verdict = expected_exit == 0   ? "passed"
                                       : expected_exit == 1 ? "failed"
                                                            : "error";
  EXPECT_EQ(out.exit_code, expected_exit) << out.out;
  EXPECT_EQ(report["verdict"], expected_verdict);
  EXPECT_EQ(report["suite_run"]["state"], state);
  ASSERT_EQ(report["runs"].size(), 2u);
  EXPECT_EQ(report["runs"][0]["scenario"], "link-flap");
  EXPECT_EQ(report["runs"][1]["scenario"], "packet-loss");
  XmlNode xml = junit(dir_ + "/ea.xml");
  EXPECT_EQ(xml.attr("name"), "expansion-acceptance");
  EXPECT_EQ(xml.property("suite_state"), state);
  EXPECT_EQ(xml.attr("failures") == "0" && xml.attr("errors") == "0", state == "passed");
}

}  // namespace
}  // namespace fabric_chaos::testing
