// The real `fabric-chaos serve` (FC_BINARY, set by ctest) on loopback without a lab: its first
// start writes an admin token file readable only by its owner, the API refuses a request without
// a token and accepts the file's token, a second start on the same database keeps the token, and
// --no-auth serves without one. Applies no fault and needs no root.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "server/auth/secret_file.h"
#include "server/auth/tokens.h"
#include "tests/privileged/support.h"

namespace fabric_chaos::auth {
namespace {

using fabric_chaos::testing::ChildProcess;
using fabric_chaos::testing::httpRequestWithAuthorization;

class ServeBinary : public fabric_chaos::testing::BinaryProcessTest {
 protected:
  // serve on an ephemeral port with the token file at its default place (next to --db).
  std::vector<std::string> args(std::vector<std::string> extra = {}) {
    std::vector<std::string> out{binary_, "serve",         "--listen",    "127.0.0.1:0",
                                 "--db",  dir_ + "/fc.db", "--state-dir", dir_ + "/state"};
    out.insert(out.end(), extra.begin(), extra.end());
    return out;
  }

  static int waitForPort(ChildProcess& serve) {
    static const std::regex kServing(R"(serving on http://127\.0\.0\.1:(\d+))");
    return serve.waitForPort(kServing, 30000, 20);
  }
};

TEST_F(ServeBinary, FirstStartWritesAnOwnerOnlyAdminTokenThatLaterStartsKeep) {
  const std::string token_file = dir_ + "/admin.token";
  std::string token;
  {
    ChildProcess serve(args());
    const int port = waitForPort(serve);
    ASSERT_GT(port, 0) << serve.output();
    EXPECT_NE(serve.output().find("admin token written to " + token_file + " (shown once)"),
              std::string::npos)
        << serve.output();

    struct stat st {};
    ASSERT_EQ(::stat(token_file.c_str(), &st), 0) << "no token file at " << token_file;
    EXPECT_EQ(st.st_mode & 07777, 0600u);
    auto read = readSecretFile(token_file);
    ASSERT_TRUE(read.isOk()) << read.status().toString();
    token = *read;
    EXPECT_TRUE(isWellFormedSecret(token)) << token;
    EXPECT_EQ(serve.output().find(token), std::string::npos) << "the secret is not printed";

    auto anonymous = httpRequestWithAuthorization(port, "GET", "/v1/runs", "", "");
    EXPECT_EQ(anonymous.status, 401) << anonymous.body;
    EXPECT_EQ(anonymous.json()["error"]["code"], "UNAUTHENTICATED") << anonymous.body;
    auto wrong = httpRequestWithAuthorization(port, "GET", "/v1/runs", "",
                                              "Bearer fct_" + std::string(64, '0'));
    EXPECT_EQ(wrong.status, 401) << wrong.body;

    auto runs = httpRequestWithAuthorization(port, "GET", "/v1/runs", "", "Bearer " + token);
    EXPECT_EQ(runs.status, 200) << runs.body;
    auto me = httpRequestWithAuthorization(port, "GET", "/v1/whoami", "", "Bearer " + token);
    ASSERT_EQ(me.status, 200) << me.body;
    EXPECT_EQ(me.json()["name"], "admin");
    EXPECT_EQ(me.json()["role"], "admin");
    // /healthz stays open for probes.
    EXPECT_EQ(httpRequestWithAuthorization(port, "GET", "/healthz", "", "").status, 200);
    EXPECT_EQ(serve.signalAndWait(SIGINT, 20000, true), 0) << serve.output();
  }
  {
    ChildProcess serve(args());
    const int port = waitForPort(serve);
    ASSERT_GT(port, 0) << serve.output();
    EXPECT_EQ(serve.output().find("admin token written"), std::string::npos) << serve.output();
    EXPECT_EQ(readSecretFile(token_file).value(), token) << "a second start rotated the token";
    auto runs = httpRequestWithAuthorization(port, "GET", "/v1/runs", "", "Bearer " + token);
    EXPECT_EQ(runs.status, 200) << runs.body;
    // The audit log holds the refusals of the first start.
    auto audit = httpRequestWithAuthorization(port, "GET", "/v1/audit", "", "Bearer " + token);
    ASSERT_EQ(audit.status, 200) << audit.body;
    int refusals = 0;
    const nlohmann::json entries = audit.json()["entries"];
    for (const auto& entry : entries) {
      if (entry["status"] == 401) ++refusals;
    }
    EXPECT_EQ(refusals, 2) << audit.body;
    EXPECT_EQ(serve.signalAndWait(SIGINT, 20000, true), 0) << serve.output();
  }
}

TEST_F(ServeBinary, ExplicitTokenFileAndNoAuth) {
  const std::string token_file = dir_ + "/elsewhere.token";
  {
    ChildProcess serve(args({"--admin-token-file", token_file}));
    ASSERT_GT(waitForPort(serve), 0) << serve.output();
    EXPECT_TRUE(std::filesystem::exists(token_file)) << serve.output();
    EXPECT_FALSE(std::filesystem::exists(dir_ + "/admin.token"));
    EXPECT_EQ(serve.signalAndWait(SIGINT, 20000, true), 0) << serve.output();
  }
  {
    ChildProcess serve(args({"--no-auth"}));
    const int port = waitForPort(serve);
    ASSERT_GT(port, 0) << serve.output();
    EXPECT_NE(serve.output().find("authentication is OFF"), std::string::npos) << serve.output();
    auto me = httpRequestWithAuthorization(port, "GET", "/v1/whoami", "", "");
    ASSERT_EQ(me.status, 200) << me.body;
    EXPECT_EQ(me.json()["name"], "anonymous");
    EXPECT_EQ(me.json()["role"], "admin");
    EXPECT_EQ(serve.signalAndWait(SIGINT, 20000, true), 0) << serve.output();
  }
}

}  // namespace
}  // namespace fabric_chaos::auth
