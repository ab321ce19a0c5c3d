// Token secrets, hashing, bearer parsing and authentication, against a real in-memory Store and a
// fake random source.

#include "server/auth/tokens.h"

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <set>
#include <string>

#include "tests/fakes/fake_random.h"

namespace fabric_chaos::auth {
namespace {

using core::Status;
using core::StatusCode;
using fakes::FakeRandomSource;
using store::Role;

TEST(SecretTest, RenderedAsPrefixAndLowerCaseHex) {
  std::array<uint8_t, 3> bytes{0x00, 0xab, 0xff};
  EXPECT_EQ(renderSecret(bytes.data(), bytes.size()), "fct_00abff");
}

TEST(SecretTest, GeneratedFrom32RandomBytes) {
  FakeRandomSource random;
  auto secret = generateSecret(random);
  ASSERT_TRUE(secret.isOk()) << secret.status().toString();
  EXPECT_EQ(secret->size(), kSecretLength);
  EXPECT_EQ(secret->size(), 68u);
  // The fake's first fill is 1, 2, 3, ...: the hex follows the bytes.
  EXPECT_EQ(secret->substr(0, 10), "fct_010203");
  EXPECT_TRUE(isWellFormedSecret(*secret));
  auto second = generateSecret(random);
  ASSERT_TRUE(second.isOk());
  EXPECT_NE(*second, *secret);
}

TEST(SecretTest, SystemRandomSecretsDiffer) {
  auto random = makeSystemRandomSource();
  std::set<std::string> seen;
  for (int i = 0; i < 50; ++i) {
    auto secret = generateSecret(*random);
    ASSERT_TRUE(secret.isOk()) << secret.status().toString();
    EXPECT_TRUE(isWellFormedSecret(*secret)) << *secret;
    seen.insert(*secret);
  }
  EXPECT_EQ(seen.size(), 50u);
}

TEST(SecretTest, RandomFailureIsReported) {
  FakeRandomSource random;
  random.failures.failOn(1, Status(StatusCode::kInternal, "getrandom: no entropy", 11));
  auto secret = generateSecret(random);
  ASSERT_FALSE(secret.isOk());
  EXPECT_EQ(secret.status().code(), StatusCode::kInternal);
  EXPECT_EQ(secret.status().origin(), 11);
  EXPECT_NE(secret.status().message().find("token secret"), std::string::npos);
}

TEST(SecretTest, WellFormed) {
  const std::string good = "fct_" + std::string(64, 'a');
  EXPECT_TRUE(isWellFormedSecret(good));
  EXPECT_TRUE(
      isWellFormedSecret("fct_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"));
  const std::string bad[] = {
      "",
      "fct_",
      "fct_" + std::string(63, 'a'),
      "fct_" + std::string(65, 'a'),
      "fct_" + std::string(63, 'a') + "A",  // upper case is not what we issue
      "fct_" + std::string(63, 'a') + "g",
      "fcx_" + std::string(64, 'a'),
      std::string(68, 'a'),
  };
  for (const std::string& s : bad) EXPECT_FALSE(isWellFormedSecret(s)) << s;
}

TEST(HashTest, Sha256KnownVectors) {
  // FIPS 180-2 test vectors.
  auto empty = sha256Hex("");
  ASSERT_TRUE(empty.isOk());
  EXPECT_EQ(*empty, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  auto abc = sha256Hex("abc");
  ASSERT_TRUE(abc.isOk());
  EXPECT_EQ(*abc, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

struct BearerCase {
  const char* header;
  const char* token;        // expected token, or nullptr for an error
  const char* message_has;  // part of the error message
};

TEST(BearerTest, Parsing) {
  const BearerCase kCases[] = {
      {"Bearer fct_abc", "fct_abc", nullptr},
      {"bearer fct_abc", "fct_abc", nullptr},
      {"BEARER   fct_abc  ", "fct_abc", nullptr},
      {"\tBearer\tfct_abc", "fct_abc", nullptr},
      {"", nullptr, "empty"},
      {"   ", nullptr, "empty"},
      {"Bearer", nullptr, "no token"},
      {"Bearer    ", nullptr, "no token"},
      {"Basic dXNlcjpwYXNz", nullptr, "\"Basic\" scheme"},
      {"fct_abc", nullptr, "expected \"Bearer <token>\""},
      {"Bearerfct_abc", nullptr, "expected \"Bearer <token>\""},
  };
  for (const BearerCase& c : kCases) {
    auto token = parseBearer(c.header);
    if (c.token != nullptr) {
      ASSERT_TRUE(token.isOk()) << c.header << ": " << token.status().toString();
      EXPECT_EQ(*token, c.token) << c.header;
    } else {
      ASSERT_FALSE(token.isOk()) << c.header;
      EXPECT_EQ(token.status().code(), StatusCode::kUnauthenticated) << c.header;
      EXPECT_NE(token.status().message().find(c.message_has), std::string::npos)
          << c.header << ": " << token.status().message();
    }
  }
  // The credential of another scheme is never echoed.
  auto basic = parseBearer("Basic dXNlcjpwYXNz");
  EXPECT_EQ(basic.status().message().find("dXNlcjpwYXNz"), std::string::npos);
}

class TokenStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = store::Store::open(":memory:");
    ASSERT_TRUE(opened.isOk()) << opened.status().toString();
    store_ = std::move(opened).value();
  }

  std::unique_ptr<store::Store> store_;
  FakeRandomSource random_;
};

TEST_F(TokenStoreTest, IssuedTokenAuthenticatesAndOnlyItsHashIsStored) {
  auto issued = issueToken(*store_, random_, "ci", Role::kOperator);
  ASSERT_TRUE(issued.isOk()) << issued.status().toString();
  auto tokens = store_->listTokens();
  ASSERT_TRUE(tokens.isOk()) << tokens.status().toString();
  ASSERT_EQ(tokens->size(), 1u);
  EXPECT_EQ(tokens->at(0).id, issued->id);
  EXPECT_EQ(tokens->at(0).secret_hash, sha256Hex(issued->secret).value());
  EXPECT_NE(tokens->at(0).secret_hash, issued->secret);

  auto who = authenticateSecret(*store_, issued->secret);
  ASSERT_TRUE(who.isOk()) << who.status().toString();
  EXPECT_EQ(who->id, issued->id);
  EXPECT_EQ(who->name, "ci");
  EXPECT_EQ(who->role, Role::kOperator);
}

TEST_F(TokenStoreTest, UnknownMalformedAndRevokedSecretsGetOneAnswer) {
  auto issued = issueToken(*store_, random_, "ci", Role::kOperator);
  ASSERT_TRUE(issued.isOk()) << issued.status().toString();
  const std::string unknown = "fct_" + std::string(64, 'e');
  auto a = authenticateSecret(*store_, unknown);
  auto b = authenticateSecret(*store_, "not-a-token");
  ASSERT_TRUE(store_->revokeToken(issued->id).isOk());
  auto c = authenticateSecret(*store_, issued->secret);
  for (const auto* result : {&a, &b, &c}) {
    ASSERT_FALSE(result->isOk());
    EXPECT_EQ(result->status().code(), StatusCode::kUnauthenticated);
    EXPECT_EQ(result->status().message(), "the bearer token is unknown or revoked");
  }
}

TEST_F(TokenStoreTest, EnsureAdminTokenCreatesOneOnlyWhenNoActiveAdminExists) {
  ASSERT_TRUE(issueToken(*store_, random_, "viewer", Role::kViewer).isOk());
  ASSERT_TRUE(issueToken(*store_, random_, "ci", Role::kOperator).isOk());

  auto first = ensureAdminToken(*store_, random_);
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  ASSERT_TRUE(first->has_value()) << "lower roles do not count as an admin";
  auto admin = authenticateSecret(*store_, **first);
  ASSERT_TRUE(admin.isOk()) << admin.status().toString();
  EXPECT_EQ(admin->name, "admin");
  EXPECT_EQ(admin->role, Role::kAdmin);

  auto second = ensureAdminToken(*store_, random_);
  ASSERT_TRUE(second.isOk()) << second.status().toString();
  EXPECT_FALSE(second->has_value()) << "an active admin exists: nothing is rotated";
  EXPECT_EQ(store_->countActiveTokens(Role::kAdmin).value(), 1);

  // With every admin token revoked the next start creates a new one.
  ASSERT_TRUE(store_->revokeToken(admin->id).isOk());
  auto third = ensureAdminToken(*store_, random_);
  ASSERT_TRUE(third.isOk()) << third.status().toString();
  ASSERT_TRUE(third->has_value());
  EXPECT_NE(**third, **first);
  EXPECT_TRUE(authenticateSecret(*store_, **third).isOk());
}

TEST_F(TokenStoreTest, EnsureAdminTokenReportsAndStoresNothingWhenRandomnessFails) {
  random_.failures.failOn(1, Status(StatusCode::kInternal, "getrandom: interrupted", 4));
  auto result = ensureAdminToken(*store_, random_);
  ASSERT_FALSE(result.isOk());
  EXPECT_NE(result.status().message().find("creating the admin token"), std::string::npos)
      << result.status().message();
  EXPECT_EQ(store_->listTokens().value().size(), 0u);
}

TEST_F(TokenStoreTest, EnsureAdminTokenWithTheSystemRandomSource) {
  auto result = ensureAdminToken(*store_);
  ASSERT_TRUE(result.isOk()) << result.status().toString();
  ASSERT_TRUE(result->has_value());
  EXPECT_TRUE(isWellFormedSecret(**result));
}

}  // namespace
}  // namespace fabric_chaos::auth
