// The /v1 handlers against a real in-memory Store and fake RunService / FabricCatalog.

#include "server/api/api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "injectors/model/kind_spec.h"
#include "scenarios/analysis.h"
#include "scenarios/engine/fabric_agents.h"
#include "server/auth/tokens.h"
#include "store/store.h"
#include "tests/api/api_test_support.h"
#include "tests/fakes/fake_agent.h"
#include "tests/fakes/fake_agent_directory.h"
#include "tests/fakes/fake_kinds.h"
#include "tests/fakes/fake_random.h"
#include "tests/fakes/fake_services.h"

namespace fabric_chaos::api {
namespace {

using core::Status;
using core::StatusCode;
using fakes::FakeFabricCatalog;
using nlohmann::json;
using testing::expectError;
using ::testing::HasSubstr;
using testing::header;

json flapScenario(const std::string& name) {
  return json{{"version", 1},
              {"name", name},
              {"description", "two flaps of h1's link"},
              {"steps",
               {{{"kind", "link_flap"},
                 {"target", {{"host", "h1"}}},
                 {"at_ms", 1000},
                 {"params", {{"down_ms", 500}, {"up_ms", 500}, {"count", 2}}}}}}};
}

json lossScenario(const std::string& name) {
  return json{{"version", 1},
              {"name", name},
              {"description", "5% loss on h0"},
              {"steps",
               {{{"kind", "packet_loss"},
                 {"target", {{"link", "h0-sw0"}}},
                 {"at_ms", 0},
                 {"duration_ms", 2000},
                 {"params", {{"percent", 5}}}},
                {{"kind", "link_flap"},
                 {"target", {{"host", "h2"}}},
                 {"at_ms", 3000},
                 {"params", {{"down_ms", 100}}}}}}};
}

class ApiTest : public testing::ApiFixture {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(openStore());
    fabrics_.add(FakeFabricCatalog::netnsLab(4));
    ASSERT_TRUE(store_->putScenario("builtin-flap", flapScenario("builtin-flap"), true).isOk());
    ASSERT_TRUE(store_->putScenario("my-loss", lossScenario("my-loss"), false).isOk());
    // Every request of these tests is an admin's: the role checks have their own tests
    // (auth_api_test.cc).
    auto admin = auth::issueToken(*store_, random_, "test-admin", store::Role::kAdmin);
    ASSERT_TRUE(admin.isOk()) << admin.status().toString();
    bearer_ = admin->secret;
    api_ = std::make_unique<Api>(deps());
  }

  ApiDeps deps() {
    ApiDeps deps;
    deps.store = store_.get();
    deps.runs = &runs_;
    deps.fabrics = &fabrics_;
    deps.capabilities = [] {
      return std::vector<injectors::KindInfo>{
          {"link_flap", "takes a link down and up", true, "", "netlink"},
          {"packet_loss", "drops a fraction of packets", false, "nftables is missing", "nftables"}};
    };
    deps.kinds = fakes::sameForEveryFabric(fakes::fakeKindCatalog({"link_flap", "packet_loss"}));
    deps.version = "1.2.3";
    deps.default_fabric = "netns-lab";
    return deps;
  }

  using ApiFixture::call;
  Response call(const std::string& method, const std::string& target, const json& body) {
    return call(method, target, body.dump());
  }

  static json parse(const Response& response) {
    EXPECT_EQ(response.content_type, "application/json");
    return json::parse(response.body);
  }

  // A finished run with samples from two ranks and two events, stored directly.
  int64_t seedRun() {
    auto id = store_->createRun("my-loss", lossScenario("my-loss"), "netns-lab");
    EXPECT_TRUE(id.isOk());
    EXPECT_TRUE(store_->setRunState(*id, "running").isOk());
    EXPECT_TRUE(store_->setRunAttribute(*id, "loss_backend", "nftables").isOk());
    std::vector<core::Sample> samples;
    for (int rank = 0; rank < 2; ++rank) {
      for (int i = 0; i < 3; ++i) {
        samples.push_back({rank, i, 10.0 * i, 8.0 + rank, 1 << 20});
      }
    }
    EXPECT_TRUE(store_->appendSamples(*id, samples).isOk());
    EXPECT_TRUE(store_->appendEvent({*id, 5.0, 1000, "fault_applied", {{"step", 0}}}).isOk());
    EXPECT_TRUE(store_->appendEvent({*id, 25.0, 1020, "fault_reverted", {{"step", 0}}}).isOk());
    EXPECT_TRUE(
        store_->finishRun(*id, "passed", 87.5, json{{"analysis", {{"score", 87.5}}}}, "").isOk());
    return *id;
  }

  size_t storedScenarioCount() {
    auto list = store_->listScenarios();
    EXPECT_TRUE(list.isOk());
    return list.isOk() ? list->size() : 0;
  }
  size_t storedRunCount() {
    auto list = store_->listRuns({});
    EXPECT_TRUE(list.isOk());
    return list.isOk() ? list->size() : 0;
  }

  fakes::FakeRandomSource random_;  // bearer_ is an admin's secret, sent with every call()
};

// --- status mapping ---------------------------------------------------------------------------

TEST(HttpStatusFor, EveryCode) {
  struct Case {
    StatusCode code;
    int http;
  };
  const Case cases[] = {
      {StatusCode::kInvalidArgument, 400}, {StatusCode::kNotFound, 404},
      {StatusCode::kAlreadyExists, 409},   {StatusCode::kFailedPrecondition, 409},
      {StatusCode::kUnprocessable, 422},   {StatusCode::kPermissionDenied, 403},
      {StatusCode::kUnauthenticated, 401}, {StatusCode::kNotSupported, 501},
      {StatusCode::kUnavailable, 503},     {StatusCode::kTimeout, 504},
      {StatusCode::kAborted, 409},         {StatusCode::kInternal, 500},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(core::statusCodeName(c.code));
    EXPECT_EQ(httpStatusFor(c.code), c.http);
    Response response = errorResponse(Status(c.code, "what happened"));
    EXPECT_EQ(response.status, c.http);
    EXPECT_EQ(response.content_type, "application/json");
    EXPECT_EQ(
        json::parse(response.body),
        (json{{"error", {{"code", core::statusCodeName(c.code)}, {"message", "what happened"}}}}));
  }
}

// --- system -----------------------------------------------------------------------------------

TEST_F(ApiTest, Healthz) {
  Response response = call("GET", "/healthz");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(parse(response), (json{{"status", "ok"}, {"version", "1.2.3"}}));
}

TEST_F(ApiTest, MetricsAreTheExpositionServeProvidesOr501) {
  Response none = call("GET", "/metrics");
  EXPECT_EQ(none.status, 501) << none.body;
  ApiDeps with_metrics = deps();
  with_metrics.metrics_text = [] { return std::string("fabric_chaos_runs{state=\"passed\"} 1\n"); };
  api_ = std::make_unique<Api>(with_metrics);
  Response response = call("GET", "/metrics");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(response.body, "fabric_chaos_runs{state=\"passed\"} 1\n");
}

TEST_F(ApiTest, EveryAnsweredRequestIsObservedUnderItsRoutePattern) {
  struct Observed {
    std::string method;
    std::string route;
    int status;
    double seconds;
  };
  std::vector<Observed> observed;
  ApiDeps observing = deps();
  observing.observe_request = [&](const std::string& method, const std::string& route, int status,
                                  double seconds) {
    observed.push_back({method, route, status, seconds});
  };
  api_ = std::make_unique<Api>(observing);
  const int64_t run = seedRun();
  call("GET", "/v1/runs/" + std::to_string(run) + "?fields=summary");
  call("GET", "/v1/runs/999999");
  call("DELETE", "/v1/runs");
  call("GET", "/no/such/thing");
  ASSERT_EQ(observed.size(), 4u);
  EXPECT_EQ(observed[0].route, "/v1/runs/:id");
  EXPECT_EQ(observed[0].status, 200);
  EXPECT_EQ(observed[1].route, "/v1/runs/:id");
  EXPECT_EQ(observed[1].status, 404);
  EXPECT_EQ(observed[2].method, "DELETE");
  EXPECT_EQ(observed[2].route, "/v1/runs");
  EXPECT_EQ(observed[2].status, 405);
  // A raw path would let any client mint new series: unknown paths share one label.
  EXPECT_EQ(observed[3].route, "unmatched");
  for (const Observed& o : observed) {
    EXPECT_GE(o.seconds, 0);
    EXPECT_LT(o.seconds, 60);
  }
}

// What the transport sends to its low-priority bulk threads: a run's samples, events,
// telemetry and stream, read with GET; not the run itself, nor a write.
TEST(IsBulkRead, ARunsSeriesAndStreamButNotTheRunOrAWrite) {
  const auto bulk = [](const std::string& method, const std::string& target) {
    Request request;
    request.method = method;
    request.target = target;
    return isBulkRead(request);
  };
  for (const char* what : {"samples?after=3", "events", "telemetry", "stream?access_token=x"}) {
    EXPECT_TRUE(bulk("GET", std::string("/v1/runs/7/") + what)) << what;
  }
  EXPECT_FALSE(bulk("GET", "/v1/runs/7"));
  EXPECT_FALSE(bulk("GET", "/v1/runs"));
  EXPECT_FALSE(bulk("POST", "/v1/runs/7/abort"));
  EXPECT_FALSE(bulk("POST", "/v1/runs/7/samples"));
  EXPECT_FALSE(bulk("GET", "/healthz"));
  EXPECT_FALSE(bulk("GET", "%zz"));
}

TEST(RouteOf, NamesThePatternNotThePath) {
  EXPECT_EQ(routeOf("/v1/runs/7/samples?after=3"), "/v1/runs/:id/samples");
  EXPECT_EQ(routeOf("/v1/scenarios/validate"), "/v1/scenarios/validate");
  EXPECT_EQ(routeOf("/v1/scenarios/my-loss"), "/v1/scenarios/:name");
  EXPECT_EQ(routeOf("/healthz"), "/healthz");
  EXPECT_EQ(routeOf("/metrics"), "/metrics");
  EXPECT_EQ(routeOf("/v1/runs/7/nope"), "unmatched");
  EXPECT_EQ(routeOf("%zz"), "unmatched");
  bool listed = false;
  for (const RouteInfo& route : routeTable()) {
    listed =
        listed || (route.pattern == "/metrics" && route.methods == std::vector<std::string>{"GET"});
  }
  EXPECT_TRUE(listed);
}

TEST_F(ApiTest, Capabilities) {
  Response response = call("GET", "/v1/capabilities");
  ASSERT_EQ(response.status, 200);
  json body = parse(response);
  EXPECT_EQ(body["version"], "1.2.3");
  ASSERT_EQ(body["fault_kinds"].size(), 2u);
  json first = body["fault_kinds"][0];
  // Each kind carries its declaration (injectors/model/kind_spec.h) as the schema.
  EXPECT_EQ(first["schema"], injectors::toJson(*injectors::findKindSpec("link_flap")));
  first.erase("schema");
  EXPECT_EQ(first, (json{{"kind", "link_flap"},
                         {"description", "takes a link down and up"},
                         {"available", true},
                         {"reason", ""},
                         {"backend", "netlink"}}));
  EXPECT_EQ(body["fault_kinds"][1]["available"], false);
  EXPECT_EQ(body["fault_kinds"][1]["reason"], "nftables is missing");
}

TEST_F(ApiTest, Fabrics) {
  Response list = call("GET", "/v1/fabrics");
  ASSERT_EQ(list.status, 200);
  json body = parse(list);
  ASSERT_EQ(body["fabrics"].size(), 1u);
  EXPECT_EQ(body["fabrics"][0], scenarios::toJson(FakeFabricCatalog::netnsLab(4)));

  Response one = call("GET", "/v1/fabrics/netns-lab");
  ASSERT_EQ(one.status, 200);
  EXPECT_EQ(parse(one)["name"], "netns-lab");

  expectError(call("GET", "/v1/fabrics/nope"), 404, "NOT_FOUND", "nope");
}

// GET /v1/fabrics/{name} asks each host's agent (FabricAgents over fake agents) and shows what it
// said; an agent that does not answer is reported as such, not a failed response. The list asks
// nobody.
TEST_F(ApiTest, AFabricShowsEachHostsAgent) {
  fabric_chaos::testing::FakeAgent guest0;
  fabric_chaos::testing::FakeAgent guest1;
  guest0.hostname = "vm0";
  guest0.version = "0.9.0";
  guest0.kinds = {{"netem", "", true, "", "netem"}};
  guest0.netdevs = {{"eth0", "", "up", "52:54:00:00:00:01"}};
  guest0.rdma_devices = {{"rxe0", {{1, "ACTIVE", 16}}}};
  guest0.realtime_skew_ns = -2'000'000'000;  // 2 s behind the controller
  guest1.unreachable = true;
  fakes::MapAgentDirectory directory;
  directory.add("http://127.0.0.1:7100", guest0);
  directory.add("http://127.0.0.1:7101", guest1);
  scenarios::FabricAgents agents(directory);
  scenarios::Fabric vm = FakeFabricCatalog::netnsLab(2, "vm-lab");
  vm.kind = "vm";
  vm.hosts[0].agent = "http://127.0.0.1:7100";
  vm.hosts[1].agent = "http://127.0.0.1:7101";
  fabrics_.add(vm);
  ApiDeps with_agents = deps();
  with_agents.fabric_agents = [&agents](const scenarios::Fabric& fabric) {
    return agents.describe(fabric);
  };
  api_ = std::make_unique<Api>(with_agents);

  Response list = call("GET", "/v1/fabrics");
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(guest0.infoCalls() + guest1.infoCalls(), 0) << "the list stays cheap";
  const json listed = parse(list);
  for (const json& fabric : listed["fabrics"]) {
    EXPECT_TRUE(fabric["hosts"][0]["agent"].is_string()) << fabric.dump();
  }

  Response one = call("GET", "/v1/fabrics/vm-lab");
  ASSERT_EQ(one.status, 200) << one.body;
  json hosts = parse(one)["hosts"];
  ASSERT_EQ(hosts.size(), 2u);
  const json& up = hosts[0]["agent"];
  EXPECT_EQ(up["name"], "http://127.0.0.1:7100");
  EXPECT_EQ(up["reachable"], true);
  EXPECT_EQ(up["version"], "0.9.0");
  EXPECT_EQ(up["hostname"], "vm0");
  EXPECT_NEAR(up["clock_offset_ms"].get<double>(), 2000, 100);
  EXPECT_EQ(up["kinds"],
            json::parse(R"([{"kind":"netem","available":true,"reason":"","backend":"netem"}])"));
  EXPECT_EQ(up["netdevs"], json::parse(R"([{"name":"eth0","netns":"","operstate":"up",
                                             "mac":"52:54:00:00:00:01"}])"));
  EXPECT_EQ(up["rdma_devices"], json::parse(R"([{"name":"rxe0","ports":[
                                             {"port":1,"state":"ACTIVE","gid_table_size":16}]}])"));
  const json& down = hosts[1]["agent"];
  EXPECT_EQ(down["name"], "http://127.0.0.1:7101");
  EXPECT_EQ(down["reachable"], false);
  EXPECT_THAT(down["error"].get<std::string>(), HasSubstr("unreachable"));
  EXPECT_FALSE(down.contains("kinds"));
}

// Validation asks the fabric's agents: one that cannot be asked is a 503 naming the host, for a
// run, a stored scenario's validation and a new scenario alike.
TEST_F(ApiTest, AnAgentThatCannotBeAskedIsA503NamingTheHost) {
  ApiDeps down = deps();
  down.kinds = [](const scenarios::Fabric& fabric) -> core::Result<scenarios::KindCatalog> {
    return Status(StatusCode::kUnavailable,
                  "cannot validate against fabric " + fabric.name + ": host h1 did not answer");
  };
  api_ = std::make_unique<Api>(down);
  expectError(call("POST", "/v1/runs", json{{"scenario", "my-loss"}}), 503, "UNAVAILABLE",
              "host h1");
  expectError(call("POST", "/v1/scenarios/validate", json{{"scenario", lossScenario("x")}}), 503,
              "UNAVAILABLE", "host h1");
  expectError(call("PUT", "/v1/scenarios/new-loss", lossScenario("new-loss")), 503, "UNAVAILABLE",
              "host h1");
}

// --- scenarios --------------------------------------------------------------------------------

TEST_F(ApiTest, ListScenarios) {
  Response response = call("GET", "/v1/scenarios");
  ASSERT_EQ(response.status, 200);
  json list = parse(response)["scenarios"];
  ASSERT_EQ(list.size(), 2u);
  json by_name = json::object();
  for (const json& s : list) by_name[s["name"].get<std::string>()] = s;
  EXPECT_EQ(by_name["builtin-flap"]["builtin"], true);
  EXPECT_EQ(by_name["builtin-flap"]["steps"], 1);
  EXPECT_EQ(by_name["builtin-flap"]["description"], "two flaps of h1's link");
  EXPECT_EQ(by_name["my-loss"]["builtin"], false);
  EXPECT_EQ(by_name["my-loss"]["steps"], 2);
  EXPECT_TRUE(by_name["my-loss"]["updated_ms"].is_number_integer());
}

TEST_F(ApiTest, GetScenario) {
  Response response = call("GET", "/v1/scenarios/my-loss");
  ASSERT_EQ(response.status, 200);
  EXPECT_EQ(parse(response), lossScenario("my-loss"));
  // Path segments are percent-decoded.
  EXPECT_EQ(call("GET", "/v1/scenarios/my%2Dloss").status, 200);
  expectError(call("GET", "/v1/scenarios/absent"), 404, "NOT_FOUND", "absent");
  expectError(call("GET", "/v1/scenarios/bad%zz"), 400, "INVALID_ARGUMENT", "percent-encoding");
}

TEST_F(ApiTest, CreateScenario) {
  Response response = call("POST", "/v1/scenarios", flapScenario("new-flap"));
  ASSERT_EQ(response.status, 201) << response.body;
  EXPECT_EQ(header(response, "Location"), "/v1/scenarios/new-flap");
  EXPECT_EQ(parse(response), flapScenario("new-flap"));
  auto stored = store_->getScenario("new-flap");
  ASSERT_TRUE(stored.isOk());
  EXPECT_EQ(stored->document, flapScenario("new-flap"));
  EXPECT_FALSE(stored->builtin);

  expectError(call("POST", "/v1/scenarios", flapScenario("new-flap")), 409, "ALREADY_EXISTS",
              "new-flap already exists");
  expectError(call("POST", "/v1/scenarios", flapScenario("builtin-flap")), 409, "ALREADY_EXISTS",
              "builtin-flap");
}

TEST_F(ApiTest, CreateScenarioRejectsAndStoresNothing) {
  json bad_time = flapScenario("t");
  bad_time["steps"][0]["at_ms"] = -5;
  json bad_kind = flapScenario("k");
  bad_kind["steps"][0]["kind"] = "bogus";
  json bad_params = lossScenario("p");
  bad_params["steps"][0]["params"]["percent"] = 500;
  json bad_target = flapScenario("tg");
  bad_target["steps"][0]["target"] = {{"host", "h9"}};
  json bad_link = flapScenario("tl");
  bad_link["steps"][0]["target"] = {{"link", "h7-sw0"}};
  json bad_name = flapScenario("Bad Name");
  json no_version = flapScenario("nv");
  no_version.erase("version");
  json unknown_field = flapScenario("uf");
  unknown_field["colour"] = "blue";

  struct Case {
    const char* name;
    std::string body;
    int status;
    const char* code;
    const char* message;
  };
  const Case cases[] = {
      {"malformed json", "{\"a\" 1}", 400, "INVALID_ARGUMENT", "malformed JSON at byte 6"},
      {"truncated json", "{\"version\": 1,", 400, "INVALID_ARGUMENT", "at byte 15"},
      {"empty body", "", 400, "INVALID_ARGUMENT", "empty"},
      {"array body", "[1, 2]", 400, "INVALID_ARGUMENT", "must be a JSON object, got array"},
      {"string body", "\"x\"", 400, "INVALID_ARGUMENT", "got string"},
      {"missing version", no_version.dump(), 400, "INVALID_ARGUMENT", "version"},
      {"unknown field", unknown_field.dump(), 400, "INVALID_ARGUMENT", "colour"},
      {"negative at_ms", bad_time.dump(), 422, "UNPROCESSABLE", "steps[0].at_ms"},
      {"unknown kind", bad_kind.dump(), 400, "INVALID_ARGUMENT",
       "steps[0].kind: unknown fault kind \"bogus\"; valid kinds: link_flap, packet_loss"},
      {"bad params", bad_params.dump(), 422, "UNPROCESSABLE", "steps[0].params: percent"},
      {"unknown host", bad_target.dump(), 422, "UNPROCESSABLE", "h9"},
      {"unknown link", bad_link.dump(), 422, "UNPROCESSABLE", "h7-sw0"},
      {"bad name", bad_name.dump(), 400, "INVALID_ARGUMENT", "name"},
  };
  const size_t before = storedScenarioCount();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    expectError(call("POST", "/v1/scenarios", c.body), c.status, c.code, c.message);
  }
  EXPECT_EQ(storedScenarioCount(), before);
  EXPECT_EQ(runs_.submitCalls(), 0);
}

TEST_F(ApiTest, ScenarioValidationWithoutFabric) {
  fabrics_.clear();
  // Kinds, parameters and timing are still checked...
  json bad_kind = flapScenario("k");
  bad_kind["steps"][0]["kind"] = "bogus";
  expectError(call("POST", "/v1/scenarios", bad_kind), 400, "INVALID_ARGUMENT",
              "valid kinds: link_flap, packet_loss");
  json bad_params = lossScenario("p");
  bad_params["steps"][0]["params"] = json::object();
  expectError(call("POST", "/v1/scenarios", bad_params), 400, "INVALID_ARGUMENT",
              "steps[0].params");
  // A parameter of the wrong type is a 400, one out of its range a 422; both name it.
  json percent_text = lossScenario("t");
  percent_text["steps"][0]["params"]["percent"] = "5";
  expectError(call("POST", "/v1/scenarios", percent_text), 400, "INVALID_ARGUMENT",
              "steps[0].params: percent: must be a number in [0, 100]");
  json percent_high = lossScenario("h");
  percent_high["steps"][0]["params"]["percent"] = 101;
  expectError(call("POST", "/v1/scenarios", percent_high), 422, "UNPROCESSABLE",
              "steps[0].params: percent: must be a number in [0, 100]");
  json no_down = flapScenario("d");
  no_down["steps"][0]["params"].erase("down_ms");
  expectError(call("POST", "/v1/scenarios", no_down), 400, "INVALID_ARGUMENT",
              "steps[0].params.down_ms");
  json too_long = flapScenario("l");
  too_long["max_duration_ms"] = 1000;
  expectError(call("POST", "/v1/scenarios", too_long), 422, "UNPROCESSABLE", "max_duration_ms");
  EXPECT_EQ(storedScenarioCount(), 2u);
  // ... but targets cannot be, so an unknown host is accepted.
  json far_host = flapScenario("far");
  far_host["steps"][0]["target"] = {{"host", "h9"}};
  EXPECT_EQ(call("POST", "/v1/scenarios", far_host).status, 201);
}

TEST_F(ApiTest, FabricCatalogFailureIsReported) {
  fabrics_.failGetOn(1, Status(StatusCode::kUnavailable, "lab agent is down"));
  expectError(call("POST", "/v1/scenarios", flapScenario("x")), 503, "UNAVAILABLE",
              "lab agent is down");
  EXPECT_EQ(storedScenarioCount(), 2u);
}

TEST_F(ApiTest, ReplaceScenario) {
  // Creating through PUT, with the name taken from the path.
  json doc = flapScenario("put-one");
  doc.erase("name");
  Response created = call("PUT", "/v1/scenarios/put-one", doc);
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(header(created, "Location"), "/v1/scenarios/put-one");
  EXPECT_EQ(store_->getScenario("put-one")->document["name"], "put-one");

  // Replacing, with a matching name in the body.
  json replacement = lossScenario("put-one");
  Response replaced = call("PUT", "/v1/scenarios/put-one", replacement);
  ASSERT_EQ(replaced.status, 200) << replaced.body;
  EXPECT_EQ(parse(replaced), replacement);
  EXPECT_EQ(store_->getScenario("put-one")->document, replacement);

  json bad_kind = lossScenario("put-one");
  bad_kind["steps"][1]["kind"] = "pfc_storm";
  json bad_target = lossScenario("put-one");
  bad_target["steps"][1]["target"] = {{"host", "h42"}};
  struct Case {
    const char* name;
    std::string target;
    std::string body;
    int status;
    const char* code;
    const char* message;
  };
  const Case cases[] = {
      {"name mismatch", "/v1/scenarios/put-one", flapScenario("other").dump(), 400,
       "INVALID_ARGUMENT", "name: \"other\" does not match the path name \"put-one\""},
      {"name not a string", "/v1/scenarios/put-one", json{{"name", 7}}.dump(), 400,
       "INVALID_ARGUMENT", "does not match"},
      {"builtin", "/v1/scenarios/builtin-flap", flapScenario("builtin-flap").dump(), 409,
       "FAILED_PRECONDITION", "built-in scenarios are read-only; copy it under a new name"},
      {"bad path name", "/v1/scenarios/Bad%20Name", flapScenario("Bad Name").dump(), 400,
       "INVALID_ARGUMENT", "Bad Name"},
      {"malformed json", "/v1/scenarios/put-one", "{]", 400, "INVALID_ARGUMENT", "byte 2"},
      {"unknown kind", "/v1/scenarios/put-one", bad_kind.dump(), 400, "INVALID_ARGUMENT",
       "steps[1].kind"},
      {"unknown target", "/v1/scenarios/put-one", bad_target.dump(), 422, "UNPROCESSABLE", "h42"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    expectError(call("PUT", c.target, c.body), c.status, c.code, c.message);
  }
  EXPECT_EQ(store_->getScenario("put-one")->document, replacement);
  EXPECT_EQ(store_->getScenario("builtin-flap")->document, flapScenario("builtin-flap"));
  EXPECT_EQ(storedScenarioCount(), 3u);
}

TEST_F(ApiTest, DeleteScenario) {
  Response deleted = call("DELETE", "/v1/scenarios/my-loss");
  EXPECT_EQ(deleted.status, 204);
  EXPECT_TRUE(deleted.body.empty());
  expectError(call("GET", "/v1/scenarios/my-loss"), 404, "NOT_FOUND", "my-loss");
  expectError(call("DELETE", "/v1/scenarios/my-loss"), 404, "NOT_FOUND", "my-loss");
  expectError(call("DELETE", "/v1/scenarios/builtin-flap"), 409, "FAILED_PRECONDITION",
              "built-in scenarios are read-only");
  EXPECT_TRUE(store_->getScenario("builtin-flap").isOk());
}

// --- runs -------------------------------------------------------------------------------------

TEST_F(ApiTest, SubmitRunByName) {
  runs_.setNextId(41);
  Response response = call("POST", "/v1/runs", json{{"scenario", "my-loss"}});
  ASSERT_EQ(response.status, 202) << response.body;
  EXPECT_EQ(parse(response),
            (json{{"id", 41}, {"state", "queued"}, {"links", {{"self", "/v1/runs/41"}}}}));
  EXPECT_EQ(header(response, "Location"), "/v1/runs/41");
  auto submissions = runs_.submissions();
  ASSERT_EQ(submissions.size(), 1u);
  EXPECT_EQ(submissions[0].scenario.name, "my-loss");
  EXPECT_EQ(submissions[0].scenario.steps.size(), 2u);
  EXPECT_EQ(submissions[0].fabric, "netns-lab");
}

TEST_F(ApiTest, SubmitRunInlineWithFabricAndGates) {
  fabrics_.add(FakeFabricCatalog::netnsLab(3, "small-lab"));
  json doc = flapScenario("inline-flap");
  doc["gates"] = {{"min_score", 50}, {"require_survival", false}};
  Response response =
      call("POST", "/v1/runs",
           json{{"scenario", doc}, {"fabric", "small-lab"}, {"gates", {{"min_score", 80}}}});
  ASSERT_EQ(response.status, 202) << response.body;
  auto submissions = runs_.submissions();
  ASSERT_EQ(submissions.size(), 1u);
  EXPECT_EQ(submissions[0].fabric, "small-lab");
  EXPECT_EQ(submissions[0].scenario.name, "inline-flap");
  EXPECT_EQ(submissions[0].scenario.gates.min_score, 80);        // the request's gate
  EXPECT_FALSE(submissions[0].scenario.gates.require_survival);  // the scenario's
  // An inline document without a name runs as "inline".
  json unnamed = flapScenario("x");
  unnamed.erase("name");
  ASSERT_EQ(call("POST", "/v1/runs", json{{"scenario", unnamed}}).status, 202);
  EXPECT_EQ(runs_.submissions()[1].scenario.name, "inline");
}

TEST_F(ApiTest, SubmitRunRejectsAndCreatesNothing) {
  seedRun();
  json bad_kind = flapScenario("k");
  bad_kind["steps"][0]["kind"] = "bogus";
  json bad_target = flapScenario("t");
  bad_target["steps"][0]["target"] = {{"host", "h9"}};
  json bad_field = flapScenario("f");
  bad_field["steps"][0]["duration_ms"] = "long";
  json bad_hosts = flapScenario("w");
  bad_hosts["workload"] = {{"hosts", {"h0", "h8"}}};

  struct Case {
    const char* name;
    std::string body;
    int status;
    const char* code;
    const char* message;
  };
  const Case cases[] = {
      {"malformed json", "{\"scenario\": }", 400, "INVALID_ARGUMENT", "malformed JSON at byte 14"},
      {"not an object", "[]", 400, "INVALID_ARGUMENT", "must be a JSON object"},
      {"number too large for a double", R"({"scenario": "my-loss", "gates": {"min_score": 1e400}})",
       400, "INVALID_ARGUMENT", "request body cannot be decoded: number overflow parsing '1e400'"},
      {"missing scenario", json{{"fabric", "netns-lab"}}.dump(), 400, "INVALID_ARGUMENT",
       "scenario: required"},
      {"scenario is a number", json{{"scenario", 3}}.dump(), 400, "INVALID_ARGUMENT",
       "scenario: must be a scenario name or an inline scenario document"},
      {"unknown scenario", json{{"scenario", "nope"}}.dump(), 404, "NOT_FOUND",
       "scenario nope not found"},
      {"unknown fabric", json{{"scenario", "my-loss"}, {"fabric", "big-lab"}}.dump(), 422,
       "UNPROCESSABLE", "fabric big-lab is not registered; run `fabric-chaos lab up` first"},
      {"fabric not a string", json{{"scenario", "my-loss"}, {"fabric", 1}}.dump(), 400,
       "INVALID_ARGUMENT", "fabric: must be a non-empty string"},
      {"unknown field", json{{"scenario", "my-loss"}, {"priority", 1}}.dump(), 400,
       "INVALID_ARGUMENT", "unknown field \"priority\""},
      {"gates not an object", json{{"scenario", "my-loss"}, {"gates", 1}}.dump(), 400,
       "INVALID_ARGUMENT", "gates: must be an object"},
      {"bad gate", json{{"scenario", "my-loss"}, {"gates", {{"min_score", 900}}}}.dump(), 422,
       "UNPROCESSABLE", "gates.min_score"},
      {"inline unknown kind", json{{"scenario", bad_kind}}.dump(), 400, "INVALID_ARGUMENT",
       "valid kinds: link_flap, packet_loss"},
      {"inline unknown target", json{{"scenario", bad_target}}.dump(), 422, "UNPROCESSABLE", "h9"},
      {"inline bad field", json{{"scenario", bad_field}}.dump(), 400, "INVALID_ARGUMENT",
       "steps[0].duration_ms"},
      {"inline unknown workload host", json{{"scenario", bad_hosts}}.dump(), 422, "UNPROCESSABLE",
       "h8"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    expectError(call("POST", "/v1/runs", c.body), c.status, c.code, c.message);
  }
  EXPECT_EQ(runs_.submitCalls(), 0);
  EXPECT_EQ(storedRunCount(), 1u);
  EXPECT_EQ(storedScenarioCount(), 2u);
}

TEST_F(ApiTest, SubmitRunReportsServiceAndCatalogFailures) {
  runs_.failSubmitOn(1, Status(StatusCode::kUnavailable, "scheduler is shutting down"));
  expectError(call("POST", "/v1/runs", json{{"scenario", "my-loss"}}), 503, "UNAVAILABLE",
              "scheduler is shutting down");
  fabrics_.failGetOn(fabrics_.getCalls() + 1, Status(StatusCode::kTimeout, "lab did not answer"));
  expectError(call("POST", "/v1/runs", json{{"scenario", "my-loss"}}), 504, "TIMEOUT",
              "lab did not answer");
  EXPECT_TRUE(runs_.submissions().empty());
}

TEST_F(ApiTest, ListRuns) {
  const int64_t id = seedRun();
  auto second = store_->createRun("builtin-flap", flapScenario("builtin-flap"), "netns-lab");
  ASSERT_TRUE(second.isOk());

  Response all = call("GET", "/v1/runs");
  ASSERT_EQ(all.status, 200);
  json runs = parse(all)["runs"];
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0]["id"], *second);  // newest first
  EXPECT_EQ(runs[0]["state"], "queued");
  EXPECT_TRUE(runs[0]["score"].is_null());
  const json& done = runs[1];
  EXPECT_EQ(done["id"], id);
  EXPECT_EQ(done["scenario"], "my-loss");
  EXPECT_EQ(done["fabric"], "netns-lab");
  EXPECT_EQ(done["state"], "passed");
  EXPECT_EQ(done["score"], 87.5);
  EXPECT_EQ(done["error"], "");
  for (const char* key : {"created_ms", "started_ms", "finished_ms"}) {
    EXPECT_TRUE(done[key].is_number_integer()) << key;
  }
  EXPECT_GT(done["finished_ms"].get<int64_t>(), 0);

  EXPECT_EQ(parse(call("GET", "/v1/runs?state=passed"))["runs"].size(), 1u);
  EXPECT_EQ(parse(call("GET", "/v1/runs?state=running"))["runs"].size(), 0u);
  EXPECT_EQ(parse(call("GET", "/v1/runs?scenario=builtin-flap"))["runs"].size(), 1u);
  EXPECT_EQ(parse(call("GET", "/v1/runs?scenario=my-loss&state=passed"))["runs"].size(), 1u);
  EXPECT_EQ(parse(call("GET", "/v1/runs?limit=1"))["runs"].size(), 1u);
  expectError(call("GET", "/v1/runs?limit=abc"), 400, "INVALID_ARGUMENT", "limit");
  expectError(call("GET", "/v1/runs?limit=0"), 400, "INVALID_ARGUMENT", "limit");
  expectError(call("GET", "/v1/runs?limit=100000"), 400, "INVALID_ARGUMENT", "limit");
}

TEST_F(ApiTest, GetRun) {
  const int64_t id = seedRun();
  Response response = call("GET", "/v1/runs/" + std::to_string(id));
  ASSERT_EQ(response.status, 200) << response.body;
  json run = parse(response);
  EXPECT_EQ(run["id"], id);
  EXPECT_EQ(run["state"], "passed");
  EXPECT_EQ(run["scenario_document"], lossScenario("my-loss"));
  EXPECT_EQ(run["attributes"], (json{{"loss_backend", "nftables"}}));
  EXPECT_EQ(run["result"], (json{{"analysis", {{"score", 87.5}}}}));
  ASSERT_EQ(run["transitions"].size(), 3u);
  EXPECT_EQ(run["transitions"][0]["state"], "queued");
  EXPECT_EQ(run["transitions"][2]["state"], "passed");
  ASSERT_EQ(run["timeline"].size(), 2u);
  EXPECT_EQ(
      run["timeline"][0],
      (json{
          {"t_ms", 5.0}, {"wall_ms", 1000}, {"kind", "fault_applied"}, {"detail", {{"step", 0}}}}));

  expectError(call("GET", "/v1/runs/abc"), 400, "INVALID_ARGUMENT", "run id");
  expectError(call("GET", "/v1/runs/-1"), 400, "INVALID_ARGUMENT", "run id");
  expectError(call("GET", "/v1/runs/99999999999999999999"), 400, "INVALID_ARGUMENT", "run id");
  expectError(call("GET", "/v1/runs/999"), 404, "NOT_FOUND", "run 999");
}

TEST_F(ApiTest, AbortRun) {
  ASSERT_EQ(call("POST", "/v1/runs", json{{"scenario", "my-loss"}}).status, 202);
  Response response = call("POST", "/v1/runs/1/abort");
  ASSERT_EQ(response.status, 202) << response.body;
  EXPECT_EQ(parse(response), (json{{"id", 1}, {"state", "aborting"}}));

  expectError(call("POST", "/v1/runs/77/abort"), 404, "NOT_FOUND", "run 77");
  runs_.setAbortResult(1, Status(StatusCode::kFailedPrecondition, "run 1 has already finished"));
  expectError(call("POST", "/v1/runs/1/abort"), 409, "FAILED_PRECONDITION", "already finished");
  expectError(call("POST", "/v1/runs/x/abort"), 400, "INVALID_ARGUMENT", "run id");
  EXPECT_EQ(runs_.abortCalls(), (std::vector<int64_t>{1, 77, 1}));
  expectError(call("GET", "/v1/runs/1/abort"), 405, "METHOD_NOT_ALLOWED", "allowed: POST");
}

TEST_F(ApiTest, RunSamples) {
  const int64_t id = seedRun();
  const std::string base = "/v1/runs/" + std::to_string(id) + "/samples";
  Response response = call("GET", base);
  ASSERT_EQ(response.status, 200) << response.body;
  json body = parse(response);
  EXPECT_EQ(body["run_id"], id);
  ASSERT_EQ(body["samples"].size(), 6u);
  const json& first = body["samples"][0];
  EXPECT_EQ(first["rank"], 0);
  EXPECT_EQ(first["iteration"], 0);
  EXPECT_EQ(first["start_ms"], 0.0);
  EXPECT_EQ(first["duration_ms"], 8.0);
  EXPECT_EQ(first["bytes"], 1 << 20);
  // Two ranks reported: world size 2.
  EXPECT_DOUBLE_EQ(first["busbw_gbps"].get<double>(), scenarios::busBandwidthGBps(1 << 20, 8.0, 2));
  EXPECT_GT(first["busbw_gbps"].get<double>(), 0);

  json rank1 = parse(call("GET", base + "?rank=1"))["samples"];
  ASSERT_EQ(rank1.size(), 3u);
  for (const json& s : rank1) EXPECT_EQ(s["rank"], 1);
  EXPECT_DOUBLE_EQ(rank1[0]["busbw_gbps"].get<double>(),
                   scenarios::busBandwidthGBps(1 << 20, 9.0, 2));
  EXPECT_TRUE(parse(call("GET", base + "?rank=5"))["samples"].empty());

  expectError(call("GET", base + "?rank=x"), 400, "INVALID_ARGUMENT", "rank");
  expectError(call("GET", "/v1/runs/4242/samples"), 404, "NOT_FOUND", "run 4242");
  expectError(call("GET", "/v1/runs/zz/samples"), 400, "INVALID_ARGUMENT", "run id");
}

// Pages by cursor: `limit` samples at most, `next_after` while a page is full, each sample once
// in the order stored; `max_points` the envelope. Bad values: 400 when not an integer, 422 out of
// range or combined with paging.
TEST_F(ApiTest, RunSamplesPageByCursorOrGiveTheirEnvelope) {
  const int64_t id = seedRun();
  const std::string base = "/v1/runs/" + std::to_string(id) + "/samples";
  json whole = parse(call("GET", base));
  ASSERT_EQ(whole["samples"].size(), 6u);
  EXPECT_EQ(whole["next_after"], nullptr);
  std::vector<json> paged;
  std::string after;
  int pages = 0;
  for (; pages < 10; ++pages) {
    Response response = call("GET", base + "?limit=4" + after);
    ASSERT_EQ(response.status, 200) << response.body;
    json page = parse(response);
    for (const json& sample : page["samples"]) paged.push_back(sample);
    if (page["next_after"].is_null()) break;
    EXPECT_EQ(page["next_after"], page["samples"].back()["seq"]);
    after = "&after=" + std::to_string(page["next_after"].get<int64_t>());
  }
  EXPECT_EQ(pages, 1);  // 4, then the last 2 (a short page: the end)
  ASSERT_EQ(paged.size(), 6u);
  for (size_t i = 0; i < paged.size(); ++i) EXPECT_EQ(paged[i], whole["samples"][i]) << i;
  // Past the end: an empty page. A rank and a time still filter a page.
  const std::string last = std::to_string(paged.back()["seq"].get<int64_t>());
  EXPECT_TRUE(parse(call("GET", base + "?after=" + last))["samples"].empty());
  json late = parse(call("GET", base + "?rank=1&after_ms=5&limit=1"))["samples"];
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0]["rank"], 1);
  EXPECT_EQ(late[0]["iteration"], 1);

  // The envelope of a stall: rank 1's iteration 40 takes 900 ms among 8-9 ms ones.
  std::vector<core::Sample> more;
  for (int i = 3; i < 100; ++i) {
    for (int rank = 0; rank < 2; ++rank) {
      more.push_back({rank, i, 10.0 * i, rank == 1 && i == 40 ? 900.0 : 8.0 + rank, 1 << 20});
    }
  }
  ASSERT_TRUE(store_->appendSamples(id, more).isOk());
  json envelope = parse(call("GET", base + "?max_points=10"));
  EXPECT_EQ(envelope["next_after"], nullptr);
  int per_rank[2] = {0, 0};
  bool stall = false;
  for (const json& sample : envelope["samples"]) {
    ++per_rank[sample["rank"].get<int>()];
    stall |= sample["rank"] == 1 && sample["duration_ms"] == 900.0;
  }
  EXPECT_LE(per_rank[0], 10);
  EXPECT_LE(per_rank[1], 10);
  EXPECT_TRUE(stall) << envelope.dump();

  expectError(call("GET", base + "?limit=0"), 422, "UNPROCESSABLE", "limit: must be from 1");
  expectError(call("GET", base + "?limit=100001"), 422, "UNPROCESSABLE", "limit");
  expectError(call("GET", base + "?limit=-3"), 400, "INVALID_ARGUMENT", "limit");
  expectError(call("GET", base + "?after=x"), 400, "INVALID_ARGUMENT", "after");
  expectError(call("GET", base + "?max_points=1"), 422, "UNPROCESSABLE", "max_points");
  expectError(call("GET", base + "?max_points=10&limit=5"), 422, "UNPROCESSABLE",
              "cannot go with after or limit");
  expectError(call("GET", base + "?max_points=10&after=2"), 422, "UNPROCESSABLE", "max_points");
}

TEST_F(ApiTest, RunSamplesWorldFromScenarioHosts) {
  json doc = flapScenario("three");
  doc["workload"] = {{"hosts", {"h0", "h1", "h2"}}};
  auto id = store_->createRun("three", doc, "netns-lab");
  ASSERT_TRUE(id.isOk());
  // Only one rank reported: the world is still the three hosts the scenario names.
  ASSERT_TRUE(store_->appendSamples(*id, {{0, 0, 0.0, 4.0, 1 << 20}}).isOk());
  json samples = parse(call("GET", "/v1/runs/" + std::to_string(*id) + "/samples"))["samples"];
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_DOUBLE_EQ(samples[0]["busbw_gbps"].get<double>(),
                   scenarios::busBandwidthGBps(1 << 20, 4.0, 3));
}

TEST_F(ApiTest, RunTelemetryGroupsPointsIntoSeries) {
  const int64_t id = seedRun();
  ASSERT_TRUE(store_
                  ->appendTelemetry(id, {{100, "sw0/p3/best_effort", "tx_bytes", 1000},
                                         {0, "sw0/p3/best_effort", "tx_bytes", 0},
                                         {0, "sw0/p3/best_effort", "backlog_bytes", 64000},
                                         {100, "sw0/p3/best_effort", "backlog_bytes", 3000},
                                         {0, "sw0/p1/lossless", "drops", 2}})
                  .isOk());
  const std::string base = "/v1/runs/" + std::to_string(id) + "/telemetry";
  Response response = call("GET", base);
  ASSERT_EQ(response.status, 200) << response.body;
  json body = parse(response);
  EXPECT_EQ(body["run_id"], id);
  ASSERT_EQ(body["series"].size(), 3u);
  EXPECT_EQ(body["series"][0], (json{{"source", "sw0/p1/lossless"},
                                     {"type", "switch_queue"},
                                     {"switch", "sw0"},
                                     {"port", "p1"},
                                     {"queue", "lossless"},
                                     {"metric", "drops"},
                                     {"kind", "counter"},
                                     {"t_ms", {0.0}},
                                     {"values", {2}}}));
  EXPECT_EQ(body["series"][1]["metric"], "backlog_bytes");
  EXPECT_EQ(body["series"][1]["kind"], "gauge");
  EXPECT_EQ(body["series"][1]["values"], (json{64000, 3000}));
  EXPECT_EQ(body["series"][2]["t_ms"], (json{0.0, 100.0}));
  EXPECT_EQ(body["series"][2]["values"], (json{0, 1000}));

  body = parse(call("GET", base + "?source=sw0/p3/best_effort&metric=tx_bytes&after_ms=50"));
  ASSERT_EQ(body["series"].size(), 1u);
  EXPECT_EQ(body["series"][0]["values"], (json{1000}));
  EXPECT_TRUE(parse(call("GET", base + "?metric=ecn_marked"))["series"].empty());
  expectError(call("GET", base + "?after_ms=soon"), 400, "INVALID_ARGUMENT", "after_ms");
  expectError(call("GET", "/v1/runs/4242/telemetry"), 404, "NOT_FOUND", "run 4242");
}

TEST_F(ApiTest, RunTelemetryNamesWhatEachSourceIs) {
  const int64_t id = seedRun();
  ASSERT_TRUE(store_
                  ->appendTelemetry(id, {{1000, "traffic/incast/h0", "sent_bytes", 5000},
                                         {1000, "traffic/incast/h0", "flows_connected", 2},
                                         {1000, "traffic/incast/h3/sink", "received_bytes", 4000},
                                         {250, "rdma/vm1/rxe0/1", "rcvd_seq_err", 3},
                                         {0, "from/a/later/version/x", "tx_bytes", 1}})
                  .isOk());
  json series = parse(call("GET", "/v1/runs/" + std::to_string(id) + "/telemetry"))["series"];
  ASSERT_EQ(series.size(), 5u);
  std::map<std::string, json> by_key;
  for (json& s : series) {
    const std::string key = s["source"].get<std::string>() + " " + s["metric"].get<std::string>();
    s.erase("t_ms");
    s.erase("values");
    by_key[key] = s;
  }
  EXPECT_EQ(by_key["traffic/incast/h0 sent_bytes"], (json{{"source", "traffic/incast/h0"},
                                                          {"type", "traffic"},
                                                          {"host", "h0"},
                                                          {"fault_kind", "incast"},
                                                          {"role", "source"},
                                                          {"metric", "sent_bytes"},
                                                          {"kind", "counter"}}));
  EXPECT_EQ(by_key["traffic/incast/h0 flows_connected"]["kind"], "gauge");
  EXPECT_EQ(by_key["traffic/incast/h3/sink received_bytes"]["role"], "sink");
  EXPECT_EQ(by_key["traffic/incast/h3/sink received_bytes"]["host"], "h3");
  EXPECT_EQ(by_key["rdma/vm1/rxe0/1 rcvd_seq_err"], (json{{"source", "rdma/vm1/rxe0/1"},
                                                          {"type", "rdma_port"},
                                                          {"host", "vm1"},
                                                          {"device", "rxe0"},
                                                          {"port", 1},
                                                          {"metric", "rcvd_seq_err"},
                                                          {"kind", "counter"}}));
  // A name no source type has is served as it is, without a type.
  EXPECT_EQ(
      by_key["from/a/later/version/x tx_bytes"],
      (json{{"source", "from/a/later/version/x"}, {"metric", "tx_bytes"}, {"kind", "counter"}}));
}

TEST_F(ApiTest, RunEvents) {
  const int64_t id = seedRun();
  Response response = call("GET", "/v1/runs/" + std::to_string(id) + "/events");
  ASSERT_EQ(response.status, 200);
  json events = parse(response)["events"];
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1]["kind"], "fault_reverted");
  EXPECT_EQ(events[1]["t_ms"], 25.0);
  EXPECT_EQ(events[1]["wall_ms"], 1020);
  EXPECT_EQ(events[1]["detail"], (json{{"step", 0}}));
  expectError(call("GET", "/v1/runs/31337/events"), 404, "NOT_FOUND", "run 31337");
}

// --- routing ----------------------------------------------------------------------------------

TEST_F(ApiTest, Routing) {
  expectError(call("GET", "/v1/nothing"), 404, "NOT_FOUND", "GET /v1/nothing");
  expectError(call("GET", "/v1/runs/1/other"), 404, "NOT_FOUND", "/v1/runs/1/other");
  expectError(call("GET", "/"), 404, "NOT_FOUND", "GET /");

  Response wrong = call("DELETE", "/v1/runs");
  expectError(wrong, 405, "METHOD_NOT_ALLOWED", "DELETE");
  EXPECT_EQ(header(wrong, "Allow"), "GET, POST");
  EXPECT_EQ(header(call("POST", "/v1/scenarios/x"), "Allow"), "GET, PUT, DELETE");
  EXPECT_EQ(header(call("PUT", "/healthz"), "Allow"), "GET");

  // A trailing slash and a query string do not change the route.
  EXPECT_EQ(call("GET", "/v1/scenarios/").status, 200);
  EXPECT_EQ(call("GET", "/healthz?probe=1").status, 200);
}

TEST_F(ApiTest, ExceptionsBecome500) {
  ApiDeps throwing = deps();
  throwing.capabilities = []() -> std::vector<injectors::KindInfo> {
    throw std::runtime_error("registry exploded");
  };
  Api api(throwing);
  Request request{"GET", "/v1/capabilities", {{"authorization", "Bearer " + bearer_}}, ""};
  Response response = api.handle(request);
  expectError(response, 500, "INTERNAL", "registry exploded");
}

}  // namespace
}  // namespace fabric_chaos::api
