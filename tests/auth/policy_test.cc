// The authorization policy (docs/api.md, "Authentication and roles") as a table.

#include "server/auth/policy.h"

#include <gtest/gtest.h>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace fabric_chaos::auth {
namespace {

using store::Role;

std::vector<std::string> split(const std::string& path) {
  std::vector<std::string> segments;
  std::istringstream in(path);
  std::string segment;
  while (std::getline(in, segment, '/')) {
    if (!segment.empty()) segments.push_back(segment);
  }
  return segments;
}

struct Case {
  const char* method;
  const char* path;
  std::optional<Role> want;
};

TEST(PolicyTest, RequiredRoles) {
  const Case kCases[] = {
      // No token: liveness, and reading the API's description (below).
      {"GET", "/healthz", std::nullopt},
      {"PUT", "/healthz", std::nullopt},  // answered 405 by the router, still no token needed
      // The API's description is public to read; writing to it is a mutation like any other.
      {"GET", "/v1/openapi.json", std::nullopt},
      {"HEAD", "/v1/openapi.json", std::nullopt},
      {"GET", "//v1/openapi.json/", std::nullopt},
      {"POST", "/v1/openapi.json", Role::kOperator},
      {"GET", "/v1/openapi.json/x", Role::kViewer},
      {"GET", "/openapi.json", Role::kViewer},
      // Every read is a viewer's.
      {"GET", "/v1/whoami", Role::kViewer},
      {"GET", "/v1/capabilities", Role::kViewer},
      {"GET", "/v1/fabrics/netns-lab", Role::kViewer},
      {"GET", "/v1/scenarios", Role::kViewer},
      {"GET", "/v1/runs/7/samples", Role::kViewer},
      {"GET", "/v1/runs/7/stream", Role::kViewer},
      {"GET", "/v1/suite-runs/3", Role::kViewer},
      {"GET", "/v1/schedules", Role::kViewer},
      {"HEAD", "/v1/runs", Role::kViewer},
      // Mutations are an operator's.
      {"POST", "/v1/runs", Role::kOperator},
      {"POST", "/v1/runs/7/abort", Role::kOperator},
      {"POST", "/v1/scenarios", Role::kOperator},
      {"POST", "/v1/scenarios/validate", Role::kOperator},
      {"PUT", "/v1/scenarios/x", Role::kOperator},
      {"DELETE", "/v1/scenarios/x", Role::kOperator},
      {"PUT", "/v1/suites/s", Role::kOperator},
      {"POST", "/v1/suite-runs", Role::kOperator},
      {"POST", "/v1/schedules", Role::kOperator},
      {"DELETE", "/v1/schedules/2", Role::kOperator},
      // Unknown methods are mutations until proven otherwise.
      {"PATCH", "/v1/runs/7", Role::kOperator},
      {"OPTIONS", "/v1/runs", Role::kOperator},
      // Tokens and audit: admin, reads included.
      {"GET", "/v1/tokens", Role::kAdmin},
      {"POST", "/v1/tokens", Role::kAdmin},
      {"DELETE", "/v1/tokens/3", Role::kAdmin},
      {"GET", "/v1/tokens/3/anything", Role::kAdmin},
      {"GET", "/v1/audit", Role::kAdmin},
      {"POST", "/v1/audit", Role::kAdmin},
      // Unknown paths are not public: the default is to ask for a token.
      {"GET", "/", Role::kViewer},
      {"GET", "/v1", Role::kViewer},
      {"GET", "/v2/tokens", Role::kViewer},
      {"GET", "/healthz/x", Role::kViewer},
      {"GET", "/v1/healthz", Role::kViewer},
      {"DELETE", "/nothing", Role::kOperator},
      // Decoded, empty-segment-free paths: the router sees these as /v1/tokens too.
      {"GET", "//v1//tokens/", Role::kAdmin},
  };
  for (const Case& c : kCases) {
    EXPECT_EQ(requiredRole(c.method, split(c.path)), c.want) << c.method << " " << c.path;
  }
}

TEST(PolicyTest, MutatingMethods) {
  EXPECT_FALSE(isMutatingMethod("GET"));
  EXPECT_FALSE(isMutatingMethod("HEAD"));
  for (const char* method : {"POST", "PUT", "DELETE", "PATCH", "OPTIONS", "get"}) {
    EXPECT_TRUE(isMutatingMethod(method)) << method;
  }
}

}  // namespace
}  // namespace fabric_chaos::auth
