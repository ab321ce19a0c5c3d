// net::HttpClient against the real transport on 127.0.0.1: URL parsing, and HTTPS with a CA
// file, with `insecure`, and the ways verification must fail (unknown CA, wrong host name,
// plain HTTP on one side).

#include "net/http_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "server/http/server.h"
#include "tests/http/tls_test_support.h"

namespace fabric_chaos::net {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

api::Response echo(const api::Request& request) {
  api::Response response;
  response.body = json{{"method", request.method}, {"target", request.target}}.dump();
  return response;
}

std::unique_ptr<http::Server> startServer(const std::string& cert = "",
                                          const std::string& key = "") {
  http::ServerOptions options;
  options.address = "127.0.0.1";
  options.port = 0;
  options.tls_cert_file = cert;
  options.tls_key_file = key;
  auto server = http::Server::start(options, echo);
  EXPECT_TRUE(server.isOk()) << server.status().toString();
  return server.isOk() ? std::move(server).value() : nullptr;
}

TEST(ParseHttpUrl, AcceptsHttpAndHttps) {
  auto plain = parseHttpUrl("http://127.0.0.1:7101");
  ASSERT_TRUE(plain.isOk());
  EXPECT_FALSE(plain->tls);
  EXPECT_EQ(plain->port, 7101);

  auto plain_default = parseHttpUrl("http://agent-3.lab/prefix/");
  ASSERT_TRUE(plain_default.isOk());
  EXPECT_EQ(plain_default->port, 80);
  EXPECT_EQ(plain_default->base_path, "/prefix");

  auto tls = parseHttpUrl("https://chaos.example");
  ASSERT_TRUE(tls.isOk());
  EXPECT_TRUE(tls->tls);
  EXPECT_EQ(tls->host, "chaos.example");
  EXPECT_EQ(tls->port, 443);

  auto tls_v6 = parseHttpUrl("https://[::1]:8443/api");
  ASSERT_TRUE(tls_v6.isOk());
  EXPECT_EQ(tls_v6->host, "::1");
  EXPECT_EQ(tls_v6->port, 8443);
  EXPECT_EQ(tls_v6->base_path, "/api");

  for (const char* bad : {"ftp://x", "127.0.0.1:80", "https://", "https://x:0", "https://x:99999",
                          "https://u@x", "http://x/p?q=1", "https://[::1"}) {
    SCOPED_TRACE(bad);
    auto url = parseHttpUrl(bad);
    ASSERT_FALSE(url.isOk());
    EXPECT_EQ(url.status().code(), core::StatusCode::kInvalidArgument);
    EXPECT_THAT(url.status().message(), HasSubstr(bad));
  }
  EXPECT_THAT(parseHttpUrl("ftp://x").status().message(),
              HasSubstr("must start with http:// or https://"));
}

class HttpsClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FC_REQUIRE_CERT(cert_);
    FC_REQUIRE_CERT(named_);
    server_ = startServer(cert_.cert_file, cert_.key_file);
    ASSERT_NE(server_, nullptr);
    base_ = "https://127.0.0.1:" + std::to_string(server_->port());
  }

  testing::TempDir dir_;
  testing::SelfSignedCert cert_ = testing::SelfSignedCert::make(dir_, "ip", "IP:127.0.0.1");
  // Valid only for a name that is not the address the tests connect to.
  testing::SelfSignedCert named_ =
      testing::SelfSignedCert::make(dir_, "named", "DNS:elsewhere.example");
  std::unique_ptr<http::Server> server_;
  std::string base_;
};

TEST_F(HttpsClientTest, VerifiesAgainstTheCallersCaFile) {
  HttpClient client(base_, 5000, {cert_.cert_file, false});
  ASSERT_TRUE(client.status().isOk()) << client.status().toString();
  auto reply = client.send({"GET", "/v1/runs", {}, ""});
  ASSERT_TRUE(reply.isOk()) << reply.status().toString();
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(json::parse(reply->body)["target"], "/v1/runs");
}

TEST_F(HttpsClientTest, InsecureAcceptsASelfSignedCertificate) {
  HttpClient client(base_, 5000, {"", /*insecure=*/true});
  auto reply = client.send({"GET", "/healthz", {}, ""});
  ASSERT_TRUE(reply.isOk()) << reply.status().toString();
  EXPECT_EQ(reply->status, 200);
}

TEST_F(HttpsClientTest, UnknownCaOrWrongHostFailsTheHandshake) {
  // Default: the system store, which does not know the self-signed certificate.
  HttpClient system_store(base_, 5000);
  ASSERT_TRUE(system_store.status().isOk()) << system_store.status().toString();
  auto untrusted = system_store.send({"GET", "/healthz", {}, ""});
  ASSERT_FALSE(untrusted.isOk());
  EXPECT_EQ(untrusted.status().code(), core::StatusCode::kUnavailable);
  EXPECT_THAT(untrusted.status().message(), HasSubstr("TLS handshake"));
  EXPECT_THAT(untrusted.status().message(), HasSubstr("certificate verify failed"));

  // A server whose certificate names another host: trusted CA, wrong name.
  auto named_server = startServer(named_.cert_file, named_.key_file);
  ASSERT_NE(named_server, nullptr);
  HttpClient wrong_host("https://127.0.0.1:" + std::to_string(named_server->port()), 5000,
                        {named_.cert_file, false});
  auto mismatch = wrong_host.send({"GET", "/healthz", {}, ""});
  ASSERT_FALSE(mismatch.isOk());
  EXPECT_THAT(mismatch.status().message(), HasSubstr("TLS handshake"));
}

TEST_F(HttpsClientTest, UnreadableCaFileIsReportedAtConstruction) {
  const std::string missing = dir_.file("missing-ca.pem");
  HttpClient client(base_, 5000, {missing, false});
  ASSERT_FALSE(client.status().isOk());
  EXPECT_EQ(client.status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_THAT(client.status().message(), HasSubstr("cannot read CA file " + missing));
  EXPECT_FALSE(client.send({"GET", "/healthz", {}, ""}).isOk());

  dir_.write("garbage-ca.pem", "not a certificate");
  HttpClient garbage(base_, 5000, {dir_.file("garbage-ca.pem"), false});
  EXPECT_THAT(garbage.status().message(), HasSubstr("cannot load CA file"));
}

TEST_F(HttpsClientTest, MismatchedSchemesFailCleanly) {
  // https:// to a plain server: the handshake fails, it does not hang.
  auto plain_server = startServer();
  ASSERT_NE(plain_server, nullptr);
  HttpClient tls_to_plain("https://127.0.0.1:" + std::to_string(plain_server->port()), 5000,
                          {"", true});
  auto failed = tls_to_plain.send({"GET", "/healthz", {}, ""});
  ASSERT_FALSE(failed.isOk());
  EXPECT_EQ(failed.status().code(), core::StatusCode::kUnavailable);
  EXPECT_THAT(failed.status().message(), HasSubstr("TLS handshake"));

  // http:// to the TLS server: an HTTP answer saying so.
  HttpClient plain_to_tls("http://127.0.0.1:" + std::to_string(server_->port()), 5000);
  auto refused = plain_to_tls.send({"GET", "/healthz", {}, ""});
  ASSERT_TRUE(refused.isOk()) << refused.status().toString();
  EXPECT_EQ(refused->status, 400);
  EXPECT_THAT(refused->body, HasSubstr("this port serves HTTPS"));
}

}  // namespace
}  // namespace fabric_chaos::net
