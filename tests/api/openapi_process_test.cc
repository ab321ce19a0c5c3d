// The OpenAPI document against the real `fabric-chaos serve --no-auth` on loopback, the other way
// round from openapi_test.cc: every operation the served GET /v1/openapi.json documents is called
// at least once with real ids and names, and none answers "no such endpoint" (404) or 405. Every
// exchange is recorded and tests/api/openapi_check.mjs validates the document (the official
// OpenAPI 3.1 schema) and each response body against the schema the document gives for its
// operation, status and media type, with npm's ajv (web/node_modules), not a validator of ours.
//
// No lab and no root: the default fabric (netns-lab) is written into the state directory as a
// star of namespaces that do not exist, so that a run of a built-in scenario is accepted and ends
// in error when its first rank cannot start. Its samples, telemetry and a fault journal entry
// (aimed at the same absent namespaces) are then written with sqlite3 as the engine would have,
// so that the bodies built from them are checked too. Label deploy; under CI a missing node or
// web/node_modules fails the test, elsewhere it skips the validation; sqlite3 is required.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tests/privileged/support.h"

namespace fabric_chaos::api {
namespace {

using fabric_chaos::testing::HttpReply;
using fabric_chaos::testing::runShell;
using nlohmann::json;

constexpr std::string_view kFinalStates[] = {"passed", "failed", "aborted", "interrupted", "error"};
bool isFinalState(const std::string& state) {
  return std::find(std::begin(kFinalStates), std::end(kFinalStates), state) !=
         std::end(kFinalStates);
}
// The Path Item fields that are operations.
constexpr std::string_view kHttpMethods[] = {"get",     "put",  "post",  "delete",
                                             "options", "head", "patch", "trace"};
bool isHttpMethod(const std::string& key) {
  return std::find(std::begin(kHttpMethods), std::end(kHttpMethods), key) != std::end(kHttpMethods);
}

bool inCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

std::string shellQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// One request and its answer, as openapi_check.mjs reads them.
struct Exchange {
  std::string method;
  std::string path_template;  // the document's path: "/v1/runs/{id}"
  std::string target;         // what was sent: "/v1/runs/1?limit=2"
  std::string request_body;
  HttpReply reply;
};

class OpenApiProcess : public fabric_chaos::testing::BinaryProcessTest {
 protected:
  void SetUp() override {
    BinaryProcessTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    const char* source = std::getenv("FC_SOURCE_DIR");
    ASSERT_NE(source, nullptr) << "FC_SOURCE_DIR must name the source tree (ctest sets it)";
    source_dir_ = source;
    // Namespaces nobody has: unique per test process, so that no lab of another test is touched.
    absent_ = "fcoa-" + std::to_string(::getpid()) + "-";
    writeDefaultFabric();
  }

  // The default fabric as four hosts on one switch, all in namespaces that do not exist.
  void writeDefaultFabric() {
    json hosts = json::array(), links = json::array(), ports = json::array();
    for (int i = 0; i < 4; ++i) {
      const std::string host = "h" + std::to_string(i);
      const std::string port = "p" + std::to_string(i);
      hosts.push_back(
          {{"name", host},
           {"netns", absent_ + host},
           {"agent", "local"},
           {"nics", {{{"name", "eth0"}, {"address", "10.253.0." + std::to_string(i + 1)}}}},
           {"labels", {{"rack", "r" + std::to_string(i / 2)}}}});
      ports.push_back(port);
      links.push_back({{"id", host + "-sw0"},
                       {"host", host},
                       {"nic", "eth0"},
                       {"switch", "sw0"},
                       {"port", port}});
    }
    const json fabric = {{"name", "netns-lab"},
                         {"kind", "netns"},
                         {"hosts", hosts},
                         {"switches",
                          {{{"name", "sw0"},
                            {"netns", absent_ + "sw0"},
                            {"bridge", "br0"},
                            {"ports", ports},
                            {"labels", json::object()}}}},
                         {"links", links}};
    std::filesystem::create_directories(dir_ + "/state/fabrics");
    std::ofstream(dir_ + "/state/fabrics/netns-lab.json") << fabric.dump(2) << "\n";
  }

  // Sends the request and records it under the document's path template.
  HttpReply call(const std::string& method, const std::string& path_template,
                 const std::string& target, const std::string& body = "") {
    Exchange exchange{method, path_template, target, body, {}};
    exchange.reply = fabric_chaos::testing::httpRequest(port_, method, target, body);
    EXPECT_NE(exchange.reply.status, 0) << method << " " << target << ": " << exchange.reply.body;
    exchanges_.push_back(exchange);
    return exchange.reply;
  }
  HttpReply call(const std::string& method, const std::string& path_template,
                 const std::string& target, const json& body) {
    return call(method, path_template, target, body.dump());
  }

  // Polls `target` until its "state" is final; the last body.
  json waitForFinal(const std::string& path_template, const std::string& target) {
    json body;
    for (int i = 0; i < 600; ++i) {
      body = call("GET", path_template, target).json();
      if (isFinalState(body.value("state", ""))) return body;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << target << " did not reach a final state: " << body.dump();
    return body;
  }

  // "" when node and the validators are installed, else what is missing.
  std::string missingNode() const {
    if (runShell("command -v node >/dev/null 2>&1").exit_code != 0) {
      return "node (Node.js) is not on PATH: apt-get install nodejs npm";
    }
    for (const char* module : {"ajv", "ajv-formats", "@seriousme/openapi-schema-validator"}) {
      if (!std::filesystem::exists(source_dir_ + "/web/node_modules/" + module)) {
        return std::string("web/node_modules/") + module + " is missing: run (cd " + source_dir_ +
               "/web && npm ci)";
      }
    }
    return "";
  }

  json exchangesJson() const {
    json out = json::array();
    for (const Exchange& e : exchanges_) {
      json entry = {{"method", e.method},
                    {"path_template", e.path_template},
                    {"target", e.target},
                    {"status", e.reply.status},
                    {"content_type", e.reply.content_type},
                    {"body", e.reply.body}};
      if (!e.request_body.empty()) entry["request_body"] = e.request_body;
      out.push_back(std::move(entry));
    }
    return out;
  }

  std::string source_dir_;
  std::string absent_;
  int port_ = 0;
  std::vector<Exchange> exchanges_;
};

TEST_F(OpenApiProcess, EveryDocumentedRouteAnswersAndEveryBodyMatchesItsSchema) {
  ASSERT_EQ(runShell("command -v sqlite3 >/dev/null").exit_code, 0)
      << "sqlite3 is needed to seed samples, telemetry and a fault (apt-get install sqlite3)";
  fabric_chaos::testing::ServeProcess serve({"--no-auth"}, dir_);
  port_ = serve.waitForPort(60000);
  ASSERT_GT(port_, 0) << serve.output();

  // System.
  call("GET", "/healthz", "/healthz");
  const HttpReply metrics = call("GET", "/metrics", "/metrics");
  EXPECT_TRUE(metrics.status == 200 || metrics.status == 501)
      << "GET /metrics: " << metrics.status << " " << metrics.body;
  const HttpReply served = call("GET", "/v1/openapi.json", "/v1/openapi.json");
  ASSERT_EQ(served.status, 200) << served.body;
  const json document = served.json();
  ASSERT_TRUE(document.is_object() && document.contains("paths")) << served.body.substr(0, 300);
  call("GET", "/v1/capabilities", "/v1/capabilities");
  call("GET", "/v1/fabrics", "/v1/fabrics");
  EXPECT_EQ(call("GET", "/v1/fabrics/{name}", "/v1/fabrics/netns-lab").status, 200);
  call("GET", "/v1/fabrics/{name}", "/v1/fabrics/nowhere");

  // Scenarios: the built-in link-flap, copied, replaced, deleted.
  call("GET", "/v1/scenarios", "/v1/scenarios");
  const HttpReply builtin = call("GET", "/v1/scenarios/{name}", "/v1/scenarios/link-flap");
  ASSERT_EQ(builtin.status, 200) << builtin.body;
  json copy = builtin.json();
  EXPECT_EQ(call("POST", "/v1/scenarios/validate", "/v1/scenarios/validate",
                 json{{"scenario", copy}, {"fabric", "netns-lab"}})
                .status,
            200);
  call("POST", "/v1/scenarios/validate", "/v1/scenarios/validate", json::object());
  copy["name"] = "openapi-check";
  EXPECT_EQ(call("POST", "/v1/scenarios", "/v1/scenarios", copy).status, 201);
  EXPECT_EQ(call("POST", "/v1/scenarios", "/v1/scenarios", copy).status, 409);
  EXPECT_EQ(call("PUT", "/v1/scenarios/{name}", "/v1/scenarios/openapi-check", copy).status, 200);
  copy.erase("name");
  EXPECT_EQ(call("PUT", "/v1/scenarios/{name}", "/v1/scenarios/openapi-put", copy).status, 201);
  call("GET", "/v1/scenarios/{name}", "/v1/scenarios/openapi-put");
  EXPECT_EQ(call("DELETE", "/v1/scenarios/{name}", "/v1/scenarios/openapi-put").status, 204);
  EXPECT_EQ(call("DELETE", "/v1/scenarios/{name}", "/v1/scenarios/link-flap").status, 409);
  call("GET", "/v1/scenarios/{name}", "/v1/scenarios/openapi-put");

  // A run of the built-in scenario on the default fabric: accepted, then error (no namespaces).
  const HttpReply created = call("POST", "/v1/runs", "/v1/runs", json{{"scenario", "link-flap"}});
  ASSERT_EQ(created.status, 202) << created.body;
  const std::string run = "/v1/runs/" + std::to_string(created.json().value("id", 0));
  const json finished = waitForFinal("/v1/runs/{id}", run);
  EXPECT_EQ(finished.value("state", ""), "error") << finished.dump();
  // What the run would have left had a lab been up, written as the engine writes it: samples of
  // two ranks (one iteration of zero duration), telemetry of each source type (and a name of
  // none), and a fault journal entry aimed at the absent namespaces.
  const json fault = {
      {"kind", "link_flap"},
      {"target", {{"type", "interface"}, {"netns", absent_ + "sw0"}, {"ifname", "p1"}}},
      {"params", {{"down_ms", 1000}}}};
  const std::string run_id = std::to_string(finished.value("id", int64_t{0}));
  std::string sql = "INSERT INTO journal (run_id, fault, prior, state, intent_ms) VALUES (" +
                    run_id + ", '" + fault.dump() + "', '{\"admin_up\": true}', 'applied', " +
                    std::to_string(finished.value("finished_ms", int64_t{0})) + ");";
  const std::string fault_id_query = "SELECT MAX(id) FROM journal;";
  for (const char* row : {"0, 0, 10.5, 2.25, 262144", "0, 1, 13.0, 0, 262144",
                          "1, 0, 10.5, 2.5, 262144", "1, 1, 13.0, 2.0, 262144"}) {
    sql += "INSERT INTO samples (run_id, rank, iteration, start_ms, duration_ms, bytes) VALUES (" +
           run_id + ", " + row + ");";
  }
  for (const char* row :
       {"100.0, 'sw0/p1/lossless', 'drops', 3", "200.0, 'sw0/p1/lossless', 'drops', 5",
        "100.0, 'sw0/p1/best_effort', 'backlog_bytes', 1500",
        "100.0, 'traffic/incast/h0', 'sent_bytes', 1000000",
        "100.0, 'traffic/incast/h3/sink', 'received_bytes', 999000",
        "100.0, 'rdma/h1/rxe0/1', 'rcvd_pkts', 42", "100.0, 'unparsed', 'value', 1"}) {
    sql += "INSERT INTO telemetry (run_id, t_ms, source, metric, value) VALUES (" + run_id + ", " +
           row + ");";
  }
  const auto seeded = runShell("sqlite3 -cmd '.timeout 5000' " + shellQuote(dir_ + "/fc.db") + " " +
                               shellQuote(sql + fault_id_query) + " 2>&1");
  ASSERT_EQ(seeded.exit_code, 0) << seeded.out;
  const std::string fault_id = std::to_string(std::atoll(seeded.out.c_str()));
  call("GET", "/v1/runs", "/v1/runs");
  call("GET", "/v1/runs", "/v1/runs?scenario=link-flap&state=error&fabric=netns-lab&limit=5");
  call("GET", "/v1/runs", "/v1/runs?limit=0");
  call("GET", "/v1/runs/{id}/events", run + "/events");
  const json samples = call("GET", "/v1/runs/{id}/samples", run + "/samples").json();
  ASSERT_EQ(samples["samples"].size(), 4u) << samples.dump();
  EXPECT_EQ(samples["samples"][1]["busbw_gbps"], 0.0) << samples.dump();
  call("GET", "/v1/runs/{id}/samples", run + "/samples?rank=0&after_ms=0");
  const json page = call("GET", "/v1/runs/{id}/samples", run + "/samples?limit=3").json();
  ASSERT_EQ(page["samples"].size(), 3u) << page.dump();
  EXPECT_EQ(page["next_after"], page["samples"][2]["seq"]) << page.dump();
  call("GET", "/v1/runs/{id}/samples",
       run + "/samples?after=" + std::to_string(page["next_after"].get<int64_t>()));
  call("GET", "/v1/runs/{id}/samples", run + "/samples?max_points=2");
  call("GET", "/v1/runs/{id}/samples", run + "/samples?max_points=2&limit=1");  // a 422
  const json telemetry = call("GET", "/v1/runs/{id}/telemetry", run + "/telemetry").json();
  EXPECT_EQ(telemetry["series"].size(), 6u) << telemetry.dump();
  call("GET", "/v1/runs/{id}/telemetry", run + "/telemetry?source=sw0/p1/lossless&metric=drops");
  const HttpReply stream = call("GET", "/v1/runs/{id}/stream", run + "/stream");
  EXPECT_EQ(stream.status, 200) << stream.body;
  EXPECT_NE(stream.body.find("event: end"), std::string::npos) << stream.body;
  call("GET", "/v1/runs/{id}/stream", "/v1/runs/999999/stream");
  EXPECT_EQ(call("POST", "/v1/runs/{id}/abort", run + "/abort").status, 409);
  call("GET", "/v1/runs/{id}", "/v1/runs/999999");
  call("GET", "/v1/runs/{id}", "/v1/runs/not-a-number");
  call("POST", "/v1/runs", "/v1/runs", json{{"scenario", "no-such-scenario"}});

  // Faults: the seeded entry, listed and reverted (its namespace is gone: nothing to undo).
  const json faults = call("GET", "/v1/faults", "/v1/faults").json();
  EXPECT_EQ(faults["faults"].size(), 1u) << faults.dump();
  call("POST", "/v1/faults/{id}/revert", "/v1/faults/" + fault_id + "/revert");
  call("POST", "/v1/faults/{id}/revert", "/v1/faults/999999/revert");

  // Agents: a registration into a real fabric (its agent does not answer), a refused one.
  EXPECT_EQ(call("POST", "/v1/agents/register", "/v1/agents/register",
                 json{{"fabric", "openapi-fleet"},
                      {"host", "node-1"},
                      {"agent", "http://127.0.0.1:9"},
                      {"labels", {{"rack", "r1"}}},
                      {"nics", {{{"name", "eth0"}, {"address", "10.9.0.1"}}}}})
                .status,
            200);
  call("GET", "/v1/fabrics/{name}", "/v1/fabrics/openapi-fleet");
  call("POST", "/v1/agents/register", "/v1/agents/register", json::object());
  call("POST", "/v1/agents/register", "/v1/agents/register",
       json{{"fabric", "netns-lab"}, {"host", "h9"}, {"agent", "http://127.0.0.1:9"}});

  // Suites and a suite run of one scenario.
  const json suite = {
      {"description", "openapi check"}, {"scenarios", {"link-flap"}}, {"stop_on_failure", true}};
  EXPECT_EQ(call("PUT", "/v1/suites/{name}", "/v1/suites/openapi-suite", suite).status, 201);
  EXPECT_EQ(call("PUT", "/v1/suites/{name}", "/v1/suites/openapi-suite", suite).status, 200);
  call("PUT", "/v1/suites/{name}", "/v1/suites/openapi-bad", json{{"scenarios", {"nope"}}});
  call("GET", "/v1/suites", "/v1/suites");
  call("GET", "/v1/suites/{name}", "/v1/suites/openapi-suite");
  call("GET", "/v1/suites/{name}", "/v1/suites/expansion-acceptance");
  const HttpReply suite_run =
      call("POST", "/v1/suite-runs", "/v1/suite-runs", json{{"suite", "openapi-suite"}});
  ASSERT_EQ(suite_run.status, 202) << suite_run.body;
  const std::string suite_run_path =
      "/v1/suite-runs/" + std::to_string(suite_run.json().value("id", 0));
  waitForFinal("/v1/suite-runs/{id}", suite_run_path);
  call("GET", "/v1/suite-runs", "/v1/suite-runs");
  call("GET", "/v1/suite-runs", "/v1/suite-runs?limit=1");
  call("POST", "/v1/suite-runs/{id}/abort", suite_run_path + "/abort");
  call("GET", "/v1/suite-runs/{id}", "/v1/suite-runs/999999");
  EXPECT_EQ(call("DELETE", "/v1/suites/{name}", "/v1/suites/openapi-suite").status, 204);
  call("DELETE", "/v1/suites/{name}", "/v1/suites/expansion-acceptance");

  // Schedules: a disabled one for a scenario and an enabled one for a suite (next fire: 1 Jan).
  const HttpReply scheduled = call("POST", "/v1/schedules", "/v1/schedules",
                                   json{{"cron", "0 0 1 1 *"},
                                        {"scenario", "link-flap"},
                                        {"fabric", "netns-lab"},
                                        {"enabled", false}});
  ASSERT_EQ(scheduled.status, 201) << scheduled.body;
  const HttpReply suite_scheduled =
      call("POST", "/v1/schedules", "/v1/schedules",
           json{{"cron", "0 0 1 1 *"}, {"suite", "expansion-acceptance"}});
  ASSERT_EQ(suite_scheduled.status, 201) << suite_scheduled.body;
  call("POST", "/v1/schedules", "/v1/schedules", json{{"cron", "0 25 * * *"}, {"suite", "x"}});
  call("GET", "/v1/schedules", "/v1/schedules");
  for (const HttpReply* reply : {&scheduled, &suite_scheduled}) {
    const std::string path = "/v1/schedules/" + std::to_string(reply->json().value("id", 0));
    call("GET", "/v1/schedules/{id}", path);
    EXPECT_EQ(call("DELETE", "/v1/schedules/{id}", path).status, 204);
  }
  call("GET", "/v1/schedules/{id}", "/v1/schedules/999999");

  // Identity, tokens and the audit log.
  call("GET", "/v1/whoami", "/v1/whoami");
  const HttpReply token =
      call("POST", "/v1/tokens", "/v1/tokens", json{{"name", "openapi-check"}, {"role", "viewer"}});
  ASSERT_EQ(token.status, 201) << token.body;
  call("POST", "/v1/tokens", "/v1/tokens", json{{"name", "bad name"}, {"role", "viewer"}});
  call("GET", "/v1/tokens", "/v1/tokens");
  const std::string token_path = "/v1/tokens/" + std::to_string(token.json().value("id", 0));
  EXPECT_EQ(call("DELETE", "/v1/tokens/{id}", token_path).status, 200);
  call("DELETE", "/v1/tokens/{id}", "/v1/tokens/999999");
  call("GET", "/v1/audit", "/v1/audit");
  call("GET", "/v1/audit", "/v1/audit?limit=2&before=5");

  // Every documented operation was called, and none answered as if it did not exist.
  std::set<std::pair<std::string, std::string>> documented;
  for (const auto& [path, item] : document["paths"].items()) {
    for (const auto& [method, operation] : item.items()) {
      if (!isHttpMethod(method)) continue;
      std::string upper = method;
      for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      documented.emplace(path, upper);
    }
  }
  std::set<std::pair<std::string, std::string>> called;
  for (const Exchange& e : exchanges_) {
    const std::string what = e.method + " " + e.target + " -> " + std::to_string(e.reply.status);
    EXPECT_EQ(documented.count({e.path_template, e.method}), 1u)
        << what << " is not documented as " << e.method << " " << e.path_template;
    called.emplace(e.path_template, e.method);
    EXPECT_NE(e.reply.status, 405) << what << ": " << e.reply.body;
    EXPECT_FALSE(e.reply.status == 404 &&
                 e.reply.body.find("no such endpoint") != std::string::npos)
        << what << ": " << e.reply.body;
  }
  for (const auto& [path, method] : documented) {
    EXPECT_EQ(called.count({path, method}), 1u) << method << " " << path << " was never called";
  }
  EXPECT_EQ(serve.stop(30000), 0) << serve.output();

  // The recordings against the document, with npm's validators.
  const std::string exchanges_file = dir_ + "/exchanges.json";
  const std::string document_file = dir_ + "/openapi.json";
  std::ofstream(exchanges_file) << exchangesJson().dump(1) << "\n";
  std::ofstream(document_file) << served.body;
  if (const std::string missing = missingNode(); !missing.empty()) {
    if (inCi()) FAIL() << missing;
    GTEST_SKIP() << missing;
  }
  const auto check =
      runShell("node " + shellQuote(source_dir_ + "/tests/api/openapi_check.mjs") + " --web " +
               shellQuote(source_dir_ + "/web") + " --document " + shellQuote(document_file) +
               " --exchanges " + shellQuote(exchanges_file) + " 2>&1");
  std::printf("%s", check.out.c_str());
  EXPECT_EQ(check.exit_code, 0) << check.out;
  std::printf("%zu exchanges recorded over %zu documented operations\n", exchanges_.size(),
              documented.size());
}

}  // namespace
}  // namespace fabric_chaos::api
