// Authentication, roles and the audit log through Api::handle / Api::openStream, against a real
// in-memory Store (tokens hashed by server/auth) and fake RunService / FabricCatalog.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "server/api/api.h"
#include "server/auth/tokens.h"
#include "store/store.h"
#include "tests/api/api_test_support.h"
#include "tests/fakes/fake_random.h"
#include "tests/fakes/fake_services.h"

namespace fabric_chaos::api {
namespace {

using fakes::FakeFabricCatalog;
using nlohmann::json;
using store::Role;
using testing::expectError;
using testing::flapScenario;
using ::testing::HasSubstr;
using testing::header;

class AuthApiTest : public testing::ApiFixture {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(openStore());
    fabrics_.add(FakeFabricCatalog::netnsLab(4));
    ASSERT_TRUE(store_->putScenario("flap", flapScenario("flap"), false).isOk());
    admin_ = issue("root", Role::kAdmin);
    operator_ = issue("ci", Role::kOperator);
    viewer_ = issue("alice", Role::kViewer);
    api_ = std::make_unique<Api>(deps(true));
  }

  ApiDeps deps(bool require_auth) {
    ApiDeps deps;
    deps.store = store_.get();
    deps.runs = &runs_;
    deps.fabrics = &fabrics_;
    deps.kinds = testing::linkFlapKinds;
    deps.version = "1.2.3";
    deps.require_auth = require_auth;
    return deps;
  }

  auth::IssuedToken issue(const std::string& name, Role role) {
    auto issued = auth::issueToken(*store_, random_, name, role);
    EXPECT_TRUE(issued.isOk()) << issued.status().toString();
    return issued.isOk() ? issued.value() : auth::IssuedToken{};
  }

  // authorization "" = no Authorization header. Hides ApiFixture::call: here every request
  // names its credentials.
  Response call(const std::string& authorization, const std::string& method,
                const std::string& target, const std::string& body = "") {
    return send(method, target, body, authorization);
  }
  Response as(const auth::IssuedToken& token, const std::string& method, const std::string& target,
              const json& body = nullptr) {
    return call("Bearer " + token.secret, method, target, body.is_null() ? "" : body.dump());
  }

  std::vector<store::AuditRecord> auditLog() {
    auto records = store_->listAudit(1000, 0);
    EXPECT_TRUE(records.isOk()) << records.status().toString();
    return records.isOk() ? records.value() : std::vector<store::AuditRecord>{};
  }

  store::TokenRecord tokenRecord(int64_t id) {
    auto tokens = store_->listTokens();  // kept: a range-for over .value() of a temporary dangles
    EXPECT_TRUE(tokens.isOk()) << tokens.status().toString();
    for (const auto& token : tokens.isOk() ? tokens.value() : std::vector<store::TokenRecord>{}) {
      if (token.id == id) return token;
    }
    ADD_FAILURE() << "no token " << id;
    return {};
  }

  static json parse(const Response& response) { return json::parse(response.body); }

  fakes::FakeRandomSource random_;
  auth::IssuedToken admin_, operator_, viewer_;
};

// --- authentication ---------------------------------------------------------------------------

TEST_F(AuthApiTest, NoTokenIs401AndAudited) {
  Response response = call("", "GET", "/v1/runs?state=passed");
  expectError(response, 401, "UNAUTHENTICATED", "no token");
  EXPECT_EQ(header(response, "WWW-Authenticate"), "Bearer");

  auto log = auditLog();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].actor, "anonymous");
  EXPECT_EQ(log[0].role, "");
  EXPECT_EQ(log[0].method, "GET");
  EXPECT_EQ(log[0].path, "/v1/runs");  // without the query
  EXPECT_EQ(log[0].status, 401);
  EXPECT_THAT(log[0].detail.value("error", ""), HasSubstr("no token"));
}

TEST_F(AuthApiTest, MalformedAuthorizationHeadersAre401) {
  expectError(call("Basic dXNlcjpwYXNz", "GET", "/v1/runs"), 401, "UNAUTHENTICATED",
              "\"Basic\" scheme");
  expectError(call("Bearer", "GET", "/v1/runs"), 401, "UNAUTHENTICATED", "no token");
  expectError(call(admin_.secret, "GET", "/v1/runs"), 401, "UNAUTHENTICATED",
              "expected \"Bearer <token>\"");
  expectError(call("Bearer not-a-token", "GET", "/v1/runs"), 401, "UNAUTHENTICATED",
              "unknown or revoked");
  expectError(call("Bearer fct_" + std::string(64, '0'), "GET", "/v1/runs"), 401, "UNAUTHENTICATED",
              "unknown or revoked");
  // The scheme is case-insensitive.
  EXPECT_EQ(call("bEaReR " + viewer_.secret, "GET", "/v1/runs").status, 200);
  // From one source within a minute: the first in full, the other four as one count.
  auto log = auditLog();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_THAT(log[0].detail.value("error", ""), HasSubstr("\"Basic\" scheme"));
  api_->flushRefusalSummaries();
  log = auditLog();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].detail["coalesced"], 4) << log[0].detail.dump();
}

TEST_F(AuthApiTest, RevokedTokenIs401LikeAnUnknownOne) {
  EXPECT_EQ(as(viewer_, "GET", "/v1/runs").status, 200);
  Response revoked = as(admin_, "DELETE", "/v1/tokens/" + std::to_string(viewer_.id));
  ASSERT_EQ(revoked.status, 200) << revoked.body;
  EXPECT_EQ(parse(revoked), (json{{"id", viewer_.id}, {"revoked", true}}));

  Response after = as(viewer_, "GET", "/v1/runs");
  Response unknown = call("Bearer fct_" + std::string(64, '1'), "GET", "/v1/runs");
  expectError(after, 401, "UNAUTHENTICATED", "unknown or revoked");
  EXPECT_EQ(after.body, unknown.body) << "a caller cannot tell revoked from unknown";
}

TEST_F(AuthApiTest, QueryTokenIsOnlyForStreams) {
  expectError(call("", "GET", "/v1/runs?access_token=" + viewer_.secret), 401, "UNAUTHENTICATED",
              "no token");
  for (const auto& record : auditLog()) {
    EXPECT_EQ(record.path.find(viewer_.secret), std::string::npos);
  }
}

TEST_F(AuthApiTest, HealthNeedsNoTokenAndIsNotAudited) {
  EXPECT_EQ(call("", "GET", "/healthz").status, 200);
  EXPECT_EQ(call("Bearer garbage", "GET", "/healthz").status, 200);
  EXPECT_TRUE(auditLog().empty());
}

TEST_F(AuthApiTest, UseIsRecordedAtMostOncePerMinute) {
  EXPECT_EQ(tokenRecord(viewer_.id).last_used_ms, 0);
  ASSERT_EQ(as(viewer_, "GET", "/v1/runs").status, 200);
  const int64_t first = tokenRecord(viewer_.id).last_used_ms;
  EXPECT_GT(first, 0);
  ASSERT_TRUE(store_->touchToken(viewer_.id, first - 1000).isOk());
  ASSERT_EQ(as(viewer_, "GET", "/v1/runs").status, 200);
  EXPECT_EQ(tokenRecord(viewer_.id).last_used_ms, first - 1000) << "touched within a minute";
  ASSERT_TRUE(store_->touchToken(viewer_.id, first - 61000).isOk());
  ASSERT_EQ(as(viewer_, "GET", "/v1/runs").status, 200);
  EXPECT_GE(tokenRecord(viewer_.id).last_used_ms, first);
}

// --- roles ------------------------------------------------------------------------------------

TEST_F(AuthApiTest, ViewerMayReadButNotMutate) {
  EXPECT_EQ(as(viewer_, "GET", "/v1/runs").status, 200);
  EXPECT_EQ(as(viewer_, "GET", "/v1/scenarios/flap").status, 200);

  Response refused = as(viewer_, "POST", "/v1/runs", json{{"scenario", "flap"}});
  expectError(refused, 403, "PERMISSION_DENIED", "needs the operator role");
  EXPECT_THAT(parse(refused)["error"]["message"].get<std::string>(),
              HasSubstr("\"alice\" has viewer"));
  EXPECT_EQ(runs_.submitCalls(), 0) << "nothing was started";
  expectError(as(viewer_, "DELETE", "/v1/scenarios/flap"), 403, "PERMISSION_DENIED", "operator");
  EXPECT_TRUE(store_->getScenario("flap").isOk());

  auto log = auditLog();
  ASSERT_EQ(log.size(), 2u) << "reads are not audited, refusals are";
  EXPECT_EQ(log[1].actor, "alice");
  EXPECT_EQ(log[1].role, "viewer");
  EXPECT_EQ(log[1].method, "POST");
  EXPECT_EQ(log[1].path, "/v1/runs");
  EXPECT_EQ(log[1].status, 403);
  EXPECT_EQ(log[1].detail["caller_token_id"], viewer_.id);
}

TEST_F(AuthApiTest, OperatorMutationsAreAuditedWithTheirOutcome) {
  Response started = as(operator_, "POST", "/v1/runs", json{{"scenario", "flap"}});
  ASSERT_EQ(started.status, 202) << started.body;
  const int64_t run_id = parse(started)["id"];
  expectError(as(operator_, "DELETE", "/v1/scenarios/nope"), 404, "NOT_FOUND", "nope");

  auto log = auditLog();  // newest first
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[1].actor, "ci");
  EXPECT_EQ(log[1].role, "operator");
  EXPECT_EQ(log[1].method, "POST");
  EXPECT_EQ(log[1].path, "/v1/runs");
  EXPECT_EQ(log[1].status, 202);
  EXPECT_EQ(log[1].detail["id"], run_id);
  EXPECT_GT(log[1].wall_ms, 0);
  EXPECT_EQ(log[0].method, "DELETE");
  EXPECT_EQ(log[0].path, "/v1/scenarios/nope");
  EXPECT_EQ(log[0].status, 404);
  EXPECT_THAT(log[0].detail.value("error", ""), HasSubstr("nope"));
}

TEST_F(AuthApiTest, TokensAndAuditAreAdminOnly) {
  for (const auto* token : {&viewer_, &operator_}) {
    expectError(as(*token, "GET", "/v1/tokens"), 403, "PERMISSION_DENIED", "needs the admin role");
    expectError(as(*token, "POST", "/v1/tokens", json{{"name", "x"}, {"role", "admin"}}), 403,
                "PERMISSION_DENIED", "admin");
    expectError(as(*token, "DELETE", "/v1/tokens/1"), 403, "PERMISSION_DENIED", "admin");
    expectError(as(*token, "GET", "/v1/audit"), 403, "PERMISSION_DENIED", "admin");
    // Percent-encoding does not get around the policy.
    expectError(as(*token, "GET", "/v1/%74okens/"), 403, "PERMISSION_DENIED", "admin");
  }
  EXPECT_EQ(as(admin_, "GET", "/v1/tokens").status, 200);
  EXPECT_EQ(as(admin_, "GET", "/v1/audit").status, 200);
  EXPECT_EQ(store_->listTokens().value().size(), 3u);
}

TEST_F(AuthApiTest, Whoami) {
  EXPECT_EQ(parse(as(operator_, "GET", "/v1/whoami")),
            (json{{"name", "ci"}, {"role", "operator"}, {"auth", true}}));
  EXPECT_EQ(call("", "GET", "/v1/whoami").status, 401);
}

// --- token management -------------------------------------------------------------------------

TEST_F(AuthApiTest, CreateTokenShowsTheSecretOnce) {
  Response created =
      as(admin_, "POST", "/v1/tokens", json{{"name", "ci-pipeline"}, {"role", "operator"}});
  ASSERT_EQ(created.status, 201) << created.body;
  json body = parse(created);
  EXPECT_EQ(body["name"], "ci-pipeline");
  EXPECT_EQ(body["role"], "operator");
  const std::string secret = body["token"];
  EXPECT_TRUE(auth::isWellFormedSecret(secret)) << secret;

  // It works at once, with its role.
  Response who = call("Bearer " + secret, "GET", "/v1/whoami");
  EXPECT_EQ(parse(who)["name"], "ci-pipeline");
  EXPECT_EQ(call("Bearer " + secret, "GET", "/v1/tokens").status, 403);

  // The list never carries a secret or its hash.
  Response listed = as(admin_, "GET", "/v1/tokens");
  ASSERT_EQ(listed.status, 200);
  EXPECT_EQ(listed.body.find(secret), std::string::npos);
  EXPECT_EQ(listed.body.find(auth::sha256Hex(secret).value()), std::string::npos);
  json tokens = parse(listed)["tokens"];
  ASSERT_EQ(tokens.size(), 4u);
  json mine;
  for (const auto& t : tokens) {
    if (t["id"] == body["id"]) mine = t;
  }
  EXPECT_EQ(mine["name"], "ci-pipeline");
  EXPECT_EQ(mine["role"], "operator");
  EXPECT_GT(mine["created_ms"].get<int64_t>(), 0);
  EXPECT_EQ(mine["revoked_ms"], 0);
  EXPECT_GT(mine["last_used_ms"].get<int64_t>(), 0);
  EXPECT_EQ(mine.size(), 6u) << mine.dump();

  // The audit log names the new token's id but not its secret.
  auto log = auditLog();
  ASSERT_FALSE(log.empty());
  const auto& record = log.back();
  EXPECT_EQ(record.path, "/v1/tokens");
  EXPECT_EQ(record.status, 201);
  EXPECT_EQ(record.detail["id"], body["id"]);
  for (const auto& r : log) EXPECT_EQ(r.detail.dump().find(secret), std::string::npos);
}

TEST_F(AuthApiTest, CreateTokenValidation) {
  struct Case {
    json body;
    std::string message;
  };
  const Case kCases[] = {
      {json{{"role", "viewer"}}, "name: required"},
      {json{{"name", ""}, {"role", "viewer"}}, "name: must be 1 to 64 characters"},
      {json{{"name", std::string(65, 'a')}, {"role", "viewer"}}, "got 65"},
      {json{{"name", "bob smith"}, {"role", "viewer"}}, "only letters, digits"},
      {json{{"name", "b\xc3\xa9"}, {"role", "viewer"}}, "only letters, digits"},
      {json{{"name", "a/b"}, {"role", "viewer"}}, "only letters, digits"},
      {json{{"name", 7}, {"role", "viewer"}}, "name: must be a string"},
      {json{{"name", "bob"}}, "role: required"},
      {json{{"name", "bob"}, {"role", "root"}}, "role: must be one of viewer, operator, admin"},
      {json{{"name", "bob"}, {"role", 2}}, "role: must be one of"},
      {json{{"name", "bob"}, {"role", "viewer"}, {"expires", 1}}, "unknown field \"expires\""},
  };
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.body.dump());
    expectError(as(admin_, "POST", "/v1/tokens", c.body), 400, "INVALID_ARGUMENT", c.message);
  }
  expectError(call("Bearer " + admin_.secret, "POST", "/v1/tokens", "{\"name\":"), 400,
              "INVALID_ARGUMENT", "malformed JSON");
  EXPECT_EQ(store_->listTokens().value().size(), 3u) << "nothing was created";
  // Every allowed character, at the length limit.
  std::string longest = "Az09._@-" + std::string(56, 'x');
  EXPECT_EQ(as(admin_, "POST", "/v1/tokens", json{{"name", longest}, {"role", "viewer"}}).status,
            201);
}

TEST_F(AuthApiTest, RevokeToken) {
  expectError(as(admin_, "DELETE", "/v1/tokens/999"), 404, "NOT_FOUND", "token 999");
  expectError(as(admin_, "DELETE", "/v1/tokens/x"), 400, "INVALID_ARGUMENT", "token id");
  ASSERT_EQ(as(admin_, "DELETE", "/v1/tokens/" + std::to_string(operator_.id)).status, 200);
  // Revoking twice is fine.
  EXPECT_EQ(as(admin_, "DELETE", "/v1/tokens/" + std::to_string(operator_.id)).status, 200);
  EXPECT_GT(tokenRecord(operator_.id).revoked_ms, 0);
}

TEST_F(AuthApiTest, TheLastActiveAdminCannotBeRevoked) {
  Response refused = as(admin_, "DELETE", "/v1/tokens/" + std::to_string(admin_.id));
  expectError(refused, 409, "FAILED_PRECONDITION", "last active admin token");
  EXPECT_EQ(tokenRecord(admin_.id).revoked_ms, 0);

  auth::IssuedToken second = issue("root2", Role::kAdmin);
  EXPECT_EQ(as(second, "DELETE", "/v1/tokens/" + std::to_string(admin_.id)).status, 200);
  expectError(as(second, "DELETE", "/v1/tokens/" + std::to_string(second.id)), 409,
              "FAILED_PRECONDITION", "last active admin");
  EXPECT_EQ(as(admin_, "GET", "/v1/tokens").status, 401);
}

// --- the audit log ----------------------------------------------------------------------------

TEST_F(AuthApiTest, ListAuditNewestFirstWithPaging) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(as(operator_, "POST", "/v1/runs", json{{"scenario", "flap"}}).status, 202);
  }
  json all = parse(as(admin_, "GET", "/v1/audit"))["entries"];
  ASSERT_EQ(all.size(), 5u);
  EXPECT_GT(all[0]["id"].get<int64_t>(), all[4]["id"].get<int64_t>());
  EXPECT_EQ(all[0]["actor"], "ci");
  EXPECT_EQ(all[0]["role"], "operator");
  EXPECT_EQ(all[0]["method"], "POST");
  EXPECT_EQ(all[0]["path"], "/v1/runs");
  EXPECT_EQ(all[0]["status"], 202);
  EXPECT_TRUE(all[0]["detail"].contains("id"));
  EXPECT_GT(all[0]["wall_ms"].get<int64_t>(), 0);

  json page = parse(as(admin_, "GET", "/v1/audit?limit=2"))["entries"];
  ASSERT_EQ(page.size(), 2u);
  EXPECT_EQ(page[0]["id"], all[0]["id"]);
  json next = parse(
      as(admin_, "GET",
         "/v1/audit?limit=2&before=" + std::to_string(page[1]["id"].get<int64_t>())))["entries"];
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(next[0]["id"], all[2]["id"]);

  expectError(as(admin_, "GET", "/v1/audit?limit=0"), 400, "INVALID_ARGUMENT",
              "limit: must be an integer from 1 to 1000");
  expectError(as(admin_, "GET", "/v1/audit?limit=1001"), 400, "INVALID_ARGUMENT", "limit");
  expectError(as(admin_, "GET", "/v1/audit?before=-1"), 400, "INVALID_ARGUMENT", "before");
  expectError(as(admin_, "GET", "/v1/audit?before=abc"), 400, "INVALID_ARGUMENT", "before");
}

// --- auth disabled ----------------------------------------------------------------------------

TEST_F(AuthApiTest, WithoutAuthEveryCallerIsAnAnonymousAdmin) {
  api_ = std::make_unique<Api>(deps(false));
  EXPECT_EQ(parse(call("", "GET", "/v1/whoami")),
            (json{{"name", "anonymous"}, {"role", "admin"}, {"auth", false}}));
  EXPECT_EQ(call("", "GET", "/v1/tokens").status, 200);
  EXPECT_EQ(call("Bearer junk", "GET", "/v1/runs").status, 200) << "credentials are ignored";
  Response started = call("", "POST", "/v1/runs", json{{"scenario", "flap"}}.dump());
  ASSERT_EQ(started.status, 202) << started.body;

  auto log = auditLog();
  ASSERT_EQ(log.size(), 1u) << "only the mutation is audited";
  EXPECT_EQ(log[0].actor, "anonymous");
  EXPECT_EQ(log[0].role, "admin");
  EXPECT_EQ(log[0].status, 202);
  EXPECT_FALSE(log[0].detail.contains("caller_token_id"));
}

// --- event streams ----------------------------------------------------------------------------

class AuthStreamTest : public AuthApiTest {
 protected:
  std::unique_ptr<core::EventStream> open(const std::string& method, const std::string& target,
                                          const std::string& authorization, Response* refusal) {
    Request request;
    request.method = method;
    request.target = target;
    if (!authorization.empty()) request.headers["authorization"] = authorization;
    return api_->openStream(request, refusal);
  }
};

TEST_F(AuthStreamTest, OtherTargetsAreLeftToHandle) {
  Response refusal;
  for (const auto& [method, target] :
       std::vector<std::pair<std::string, std::string>>{{"GET", "/v1/runs/1"},
                                                        {"GET", "/v1/runs/1/samples"},
                                                        {"POST", "/v1/runs/1/stream"},
                                                        {"GET", "/v1/runs/1/stream/x"},
                                                        {"GET", "/healthz"}}) {
    EXPECT_EQ(open(method, target, "", &refusal), nullptr) << method << " " << target;
    EXPECT_EQ(refusal.status, 0) << method << " " << target;
  }
  EXPECT_TRUE(auditLog().empty());
}

TEST_F(AuthStreamTest, StreamsAuthenticateByHeaderOrQuery) {
  auto run_id = store_->createRun("flap", flapScenario("flap"), "netns-lab");
  ASSERT_TRUE(run_id.isOk());
  const std::string target = "/v1/runs/" + std::to_string(*run_id) + "/stream";
  Response refusal;

  EXPECT_EQ(open("GET", target, "", &refusal), nullptr);
  expectError(refusal, 401, "UNAUTHENTICATED", "?access_token=");

  EXPECT_NE(open("GET", target, "Bearer " + viewer_.secret, &refusal), nullptr);
  EXPECT_NE(open("GET", target + "?access_token=" + viewer_.secret, "", &refusal), nullptr);

  // Unknown run: whatever the stream handler answers, after authentication.
  EXPECT_EQ(open("GET", "/v1/runs/424242/stream?access_token=" + viewer_.secret, "", &refusal),
            nullptr);
  EXPECT_EQ(refusal.status, 404) << refusal.body;

  // A revoked token in the query: 401, and the audit log never holds the query.
  ASSERT_TRUE(store_->revokeToken(viewer_.id).isOk());
  EXPECT_EQ(open("GET", target + "?access_token=" + viewer_.secret, "", &refusal), nullptr);
  expectError(refusal, 401, "UNAUTHENTICATED", "unknown or revoked");
  // The second refusal from the same source is counted into the first one's window.
  auto log = auditLog();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].path, target);
  EXPECT_EQ(log[0].status, 401);
  api_->flushRefusalSummaries();
  log = auditLog();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].detail["coalesced"], 1) << log[0].detail.dump();
  for (const auto& record : log) {
    EXPECT_EQ(record.path.find(viewer_.secret), std::string::npos);
    EXPECT_EQ(record.detail.dump().find(viewer_.secret), std::string::npos);
  }
}

// Unauthenticated refusals per source address (server/auth/refusal_limiter.h), on a clock the
// test moves.
class RefusalLimitTest : public AuthApiTest {
 protected:
  void SetUp() override {
    AuthApiTest::SetUp();
    ApiDeps limited = deps(true);
    limited.refusal_limits.window_ms = 60000;
    limited.refusal_limits.max_per_window = 5;
    limited.wall_now_ms = [this] { return now_ms_; };
    api_ = std::make_unique<Api>(limited);
  }

  Response from(const std::string& peer, const std::string& authorization,
                const std::string& method = "GET", const std::string& target = "/v1/runs") {
    Request request;
    request.method = method;
    request.target = target;
    request.peer = peer;
    if (!authorization.empty()) request.headers["authorization"] = authorization;
    return api_->handle(request);
  }

  int64_t now_ms_ = 1700000000000;
};

TEST_F(RefusalLimitTest, ASourcesRefusalsInAWindowAreOneRowThenOneCount) {
  for (int i = 0; i < 4; ++i) EXPECT_EQ(from("192.0.2.7", "Bearer nope").status, 401);
  EXPECT_EQ(from("198.51.100.1", "").status, 401);
  auto log = auditLog();
  ASSERT_EQ(log.size(), 2u) << "one row per source";
  EXPECT_EQ(log[1].detail["source"], "192.0.2.7");
  EXPECT_EQ(log[0].detail["source"], "198.51.100.1");

  // The window ends; the next request of anyone writes its summary.
  now_ms_ += 60000;
  EXPECT_EQ(from("203.0.113.9", "", "GET", "/healthz").status, 200);
  log = auditLog();
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0].detail["source"], "192.0.2.7");
  EXPECT_EQ(log[0].detail["coalesced"], 3);
  EXPECT_EQ(log[0].detail["throttled"], 0);
  EXPECT_EQ(log[0].detail["window_start_ms"], 1700000000000);
  EXPECT_EQ(log[0].status, 401);
  // A new window starts with a full row again.
  EXPECT_EQ(from("192.0.2.7", "Bearer nope").status, 401);
  EXPECT_EQ(auditLog().size(), 4u);
}

TEST_F(RefusalLimitTest, PastTheLimitTheSourceGets429UntilItsWindowEnds) {
  for (int i = 0; i < 5; ++i) EXPECT_EQ(from("192.0.2.7", "Bearer nope").status, 401);
  // Even a valid token is not looked at from that source now; other sources are unaffected.
  Response throttled = from("192.0.2.7", "Bearer " + viewer_.secret);
  expectError(throttled, 429, "TOO_MANY_REQUESTS", "192.0.2.7");
  EXPECT_EQ(header(throttled, "Retry-After"), "60");
  EXPECT_EQ(from("198.51.100.1", "Bearer " + viewer_.secret).status, 200);
  // Public endpoints stay public.
  EXPECT_EQ(from("192.0.2.7", "", "GET", "/healthz").status, 200);
  now_ms_ += 30000;
  EXPECT_EQ(header(from("192.0.2.7", "Bearer nope", "POST", "/v1/runs"), "Retry-After"), "30");
  EXPECT_EQ(auditLog().size(), 1u) << "throttled requests, mutations included, are only counted";

  now_ms_ += 30000;
  EXPECT_EQ(from("192.0.2.7", "Bearer " + viewer_.secret).status, 200);
  auto log = auditLog();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].detail["coalesced"], 4);
  EXPECT_EQ(log[0].detail["throttled"], 2);
}

TEST_F(RefusalLimitTest, AKnownTokensRefusalsStayIndividualRows) {
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(from("192.0.2.7", "Bearer " + viewer_.secret, "POST", "/v1/tokens").status, 403);
  }
  auto log = auditLog();
  ASSERT_EQ(log.size(), 3u) << "a 403 names its token holder: every one is kept";
  EXPECT_EQ(log[0].actor, "alice");
}

TEST_F(RefusalLimitTest, FlushWritesTheOpenWindowsOnTheWayOut) {
  for (int i = 0; i < 3; ++i) from("192.0.2.7", "");
  api_->flushRefusalSummaries();
  auto log = auditLog();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].detail["coalesced"], 2);
  api_->flushRefusalSummaries();
  EXPECT_EQ(auditLog().size(), 2u) << "nothing is written twice";
}

}  // namespace
}  // namespace fabric_chaos::api
