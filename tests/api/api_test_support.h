#pragma once
// Shared by the tests/api executables: a fixture holding a fresh ":memory:" Store and the fake
// services an Api is built over, a way to send requests through Api::handle, and the common
// assertions on error bodies. Header-only; single-threaded like the tests that use it.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "scenarios/validate.h"
#include "server/api/api.h"
#include "store/store.h"
#include "tests/fakes/fake_kinds.h"
#include "tests/fakes/fake_services.h"

namespace fabric_chaos::api::testing {

using nlohmann::json;

// A minimal valid scenario: one 500 ms flap of h1's link, 1 s in.
inline json flapScenario(const std::string& name) {
  return json{{"version", 1},
              {"name", name},
              {"steps",
               {{{"kind", "link_flap"},
                 {"target", {{"host", "h1"}}},
                 {"at_ms", 1000},
                 {"params", {{"down_ms", 500}}}}}}};
}

// Only link_flap is known, and any params are accepted: for tests about the handlers rather than
// about parameter validation.
// ApiDeps::kinds for every fabric: link_flap only.
inline scenarios::KindCatalog linkFlapKinds(const scenarios::Fabric&) {
  return fakes::fakeKindCatalog({"link_flap"});
}

// The body is {"error": {"code": code, "message": "...message_part..."}} with this HTTP status.
inline void expectError(const Response& response, int status, const std::string& code,
                        const std::string& message_part) {
  EXPECT_EQ(response.status, status) << response.body;
  json body = json::parse(response.body, nullptr, false);
  ASSERT_TRUE(body.is_object() && body.contains("error")) << response.body;
  EXPECT_EQ(body["error"]["code"], code) << response.body;
  EXPECT_THAT(body["error"]["message"].get<std::string>(), ::testing::HasSubstr(message_part));
}

// The value of a response header, "" when absent; names are compared exactly.
inline std::string header(const Response& response, const std::string& name) {
  for (const auto& [key, value] : response.headers) {
    if (key == name) return value;
  }
  return "";
}

// Each test's fixture derives from this, opens the store in SetUp, fills in the ApiDeps it needs
// and builds api_.
class ApiFixture : public ::testing::Test {
 protected:
  // A fresh ":memory:" store in store_; use as ASSERT_NO_FATAL_FAILURE(openStore()).
  void openStore() {
    auto opened = store::Store::open(":memory:");
    ASSERT_TRUE(opened.isOk()) << opened.status().toString();
    store_ = std::move(opened).value();
  }

  // authorization "" = no Authorization header.
  Response send(const std::string& method, const std::string& target, const std::string& body,
                const std::string& authorization) {
    Request request;
    request.method = method;
    request.target = target;
    request.body = body;
    if (!authorization.empty()) request.headers["authorization"] = authorization;
    return api_->handle(request);
  }

  // As bearer_ (no Authorization header while it is empty).
  Response call(const std::string& method, const std::string& target,
                const std::string& body = "") {
    return send(method, target, body, bearer_.empty() ? "" : "Bearer " + bearer_);
  }

  // GET that must answer 200; the body parsed (discarded when it is not JSON).
  json get(const std::string& target) {
    Response response = call("GET", target);
    EXPECT_EQ(response.status, 200) << target << ": " << response.body;
    return json::parse(response.body, nullptr, false);
  }

  std::unique_ptr<store::Store> store_;
  fakes::FakeRunService runs_;
  fakes::FakeFabricCatalog fabrics_;
  fakes::FakeSuiteService suites_;
  std::unique_ptr<Api> api_;
  std::string bearer_;  // the token secret call() sends; "" = none
};

}  // namespace fabric_chaos::api::testing
