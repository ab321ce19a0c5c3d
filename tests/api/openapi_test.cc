// The OpenAPI document (server/api/openapi.json, embedded; GET /v1/openapi.json) against the code
// it describes: every route and method api::routeTable() dispatches is documented, and every
// documented operation is dispatched (the event stream, served by Api::openStream, is the one
// named exception); every $ref resolves; every path parameter is declared; each operation's
// security names the role auth::requiredRole asks for. Its schemas are held against real
// responses, with npm's validators, by openapi_process_test.cc.

#include "server/api/openapi.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/api/api.h"
#include "server/auth/policy.h"
#include "store/store.h"

namespace fabric_chaos::api {
namespace {

using nlohmann::json;

// Served by Api::openStream, before the route table is consulted.
constexpr char kStreamPath[] = "/v1/runs/{id}/stream";
// The Path Item fields that are operations.
constexpr std::string_view kHttpMethods[] = {"get",     "put",  "post",  "delete",
                                             "options", "head", "patch", "trace"};
bool isHttpMethod(const std::string& key) {
  return std::find(std::begin(kHttpMethods), std::end(kHttpMethods), key) != std::end(kHttpMethods);
}

json document() { return json::parse(openApiDocument(), nullptr, /*allow_exceptions=*/false); }

// "/v1/runs/:id" -> "/v1/runs/{id}".
std::string templateOf(const std::string& pattern) {
  return std::regex_replace(pattern, std::regex(":([A-Za-z_]+)"), "{$1}");
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string upper(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

// Every documented (path template, method) pair, methods in upper case.
std::set<std::pair<std::string, std::string>> documentedOperations(const json& doc) {
  std::set<std::pair<std::string, std::string>> out;
  for (const auto& [path, item] : doc.at("paths").items()) {
    for (const auto& [key, operation] : item.items()) {
      if (isHttpMethod(key)) out.emplace(path, upper(key));
    }
  }
  return out;
}

std::set<std::pair<std::string, std::string>> routedOperations() {
  std::set<std::pair<std::string, std::string>> out;
  for (const RouteInfo& route : routeTable()) {
    for (const std::string& method : route.methods) out.emplace(templateOf(route.pattern), method);
  }
  return out;
}

// Calls visit(value, json_pointer_text) for every value in the document.
template <typename Visit>
void walk(const json& value, const std::string& at, const Visit& visit) {
  visit(value, at);
  if (value.is_object()) {
    for (const auto& [key, child] : value.items()) {
      std::string token =
          std::regex_replace(std::regex_replace(key, std::regex("~"), "~0"), std::regex("/"), "~1");
      walk(child, at + "/" + token, visit);
    }
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) walk(value[i], at + "/" + std::to_string(i), visit);
  }
}

// A local reference's target, or nullopt when it does not resolve.
std::optional<json> resolve(const json& doc, const json& node) {
  if (!node.is_object() || !node.contains("$ref")) return node;
  const std::string ref = node.at("$ref").get<std::string>();
  if (ref.rfind("#/", 0) != 0) return std::nullopt;
  const json::json_pointer pointer(ref.substr(1));
  if (!doc.contains(pointer)) return std::nullopt;
  return doc.at(pointer);
}

TEST(OpenApiDocumentTest, IsOpenApi31WithTheJsonSchema202012Dialect) {
  const json doc = document();
  ASSERT_TRUE(doc.is_object()) << "server/api/openapi.json is not a JSON object";
  EXPECT_EQ(doc.value("openapi", ""), "3.1.0");
  EXPECT_EQ(doc.value("jsonSchemaDialect", ""), "https://json-schema.org/draft/2020-12/schema");
  ASSERT_TRUE(doc.contains("paths") && doc["paths"].is_object());
  EXPECT_TRUE(doc["components"]["schemas"].contains("Error"));
}

TEST(OpenApiDocumentTest, DocumentsEveryRoutedOperation) {
  const auto documented = documentedOperations(document());
  const auto routed = routedOperations();
  ASSERT_FALSE(routed.empty());
  for (const auto& [path, method] : routed) {
    EXPECT_EQ(documented.count({path, method}), 1u)
        << method << " " << path << " is routed (server/api/api.cc kRoutes) but not documented "
        << "in server/api/openapi.json";
  }
}

TEST(OpenApiDocumentTest, RoutesEveryDocumentedOperationButTheStream) {
  const auto documented = documentedOperations(document());
  const auto routed = routedOperations();
  for (const auto& [path, method] : documented) {
    if (path == kStreamPath && method == "GET") continue;  // Api::openStream
    EXPECT_EQ(routed.count({path, method}), 1u)
        << method << " " << path << " is documented but no route serves it";
  }
  // The exception is still needed: the stream is documented and not in the route table.
  EXPECT_EQ(documented.count({kStreamPath, "GET"}), 1u);
  EXPECT_EQ(routed.count({kStreamPath, "GET"}), 0u)
      << "the stream moved into the route table: drop the exception";
}

TEST(OpenApiDocumentTest, EveryRefResolvesInsideTheDocument) {
  const json doc = document();
  int refs = 0;
  walk(doc, "", [&](const json& value, const std::string& at) {
    if (!value.is_object() || !value.contains("$ref")) return;
    ++refs;
    const json& ref = value["$ref"];
    ASSERT_TRUE(ref.is_string()) << at;
    EXPECT_TRUE(resolve(doc, value).has_value())
        << at << ": $ref " << ref.get<std::string>() << " does not resolve";
  });
  EXPECT_GT(refs, 50);
}

TEST(OpenApiDocumentTest, DeclaresEveryPathParameter) {
  const json doc = document();
  const std::regex placeholder("\\{([^}]+)\\}");
  for (const auto& [path, item] : doc["paths"].items()) {
    std::set<std::string> in_template;
    for (auto it = std::sregex_iterator(path.begin(), path.end(), placeholder);
         it != std::sregex_iterator(); ++it) {
      in_template.insert((*it)[1]);
    }
    for (const auto& [method, operation] : item.items()) {
      if (!isHttpMethod(method)) continue;
      std::set<std::string> declared;
      for (const json* list : {&item, &operation}) {
        for (const json& raw : list->value("parameters", json::array())) {
          auto parameter = resolve(doc, raw);
          ASSERT_TRUE(parameter.has_value()) << path;
          if (parameter->value("in", "") != "path") continue;
          EXPECT_TRUE(parameter->value("required", false)) << path << " " << (*parameter)["name"];
          declared.insert(parameter->value("name", ""));
        }
      }
      EXPECT_EQ(declared, in_template) << upper(method) << " " << path;
    }
  }
}

// Each operation's security requirements name the role the policy asks for: none (an empty list)
// for a public operation, else every alternative lists exactly that role.
TEST(OpenApiDocumentTest, SecurityNamesTheRoleThePolicyRequires) {
  const json doc = document();
  for (const auto& [path, method] : documentedOperations(doc)) {
    std::vector<std::string> segments;
    for (size_t start = 1; start <= path.size();) {
      size_t end = std::min(path.find('/', start), path.size());
      std::string segment = path.substr(start, end - start);
      if (!segment.empty()) segments.push_back(segment.front() == '{' ? "7" : segment);
      start = end + 1;
    }
    const std::optional<store::Role> role = auth::requiredRole(method, segments);
    const json& operation = doc["paths"][path][lower(method)];
    ASSERT_TRUE(operation.contains("security"))
        << method << " " << path << ": say who may call it (security: [] when public)";
    const json& security = operation["security"];
    if (!role) {
      EXPECT_EQ(security, json::array()) << method << " " << path << " is public";
      continue;
    }
    ASSERT_TRUE(security.is_array() && !security.empty()) << method << " " << path;
    for (const json& requirement : security) {
      for (const auto& [scheme, roles] : requirement.items()) {
        EXPECT_TRUE(doc["components"]["securitySchemes"].contains(scheme)) << scheme;
        EXPECT_EQ(roles, json::array({store::roleName(*role)}))
            << method << " " << path << " needs the " << store::roleName(*role) << " role";
      }
    }
  }
}

// Every operation says what it is and answers errors with the shared Error schema.
TEST(OpenApiDocumentTest, OperationsHaveSummariesUniqueIdsAndErrorBodies) {
  const json doc = document();
  std::set<std::string> ids;
  for (const auto& [path, method] : documentedOperations(doc)) {
    const json& operation = doc["paths"][path][lower(method)];
    const std::string where = method + " " + path;
    EXPECT_FALSE(operation.value("summary", "").empty()) << where;
    EXPECT_TRUE(ids.insert(operation.value("operationId", "")).second)
        << where << ": operationId missing or not unique";
    bool success = false;
    for (const auto& [status, raw] : operation["responses"].items()) {
      success = success || status.front() == '2';
      if (status != "default" && status.front() < '4') continue;
      auto response = resolve(doc, raw);
      ASSERT_TRUE(response.has_value()) << where << " " << status;
      EXPECT_EQ((*response)["content"]["application/json"]["schema"],
                json({{"$ref", "#/components/schemas/Error"}}))
          << where << " " << status;
    }
    EXPECT_TRUE(success) << where << ": no success response";
  }
}

class OpenApiServingTest : public ::testing::Test {
 protected:
  Response get(const std::string& method, const std::string& target) {
    ApiDeps deps;
    deps.require_auth = true;  // no store: only public paths can succeed
    Api api(deps);
    Request request;
    request.method = method;
    request.target = target;
    return api.handle(request);
  }
};

TEST_F(OpenApiServingTest, ServesTheEmbeddedDocumentWithoutAToken) {
  const Response response = get("GET", "/v1/openapi.json");
  EXPECT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(response.content_type, "application/json");
  EXPECT_EQ(response.body, openApiDocument());
  EXPECT_FALSE(openApiDocument().empty());
}

TEST_F(OpenApiServingTest, OtherMethodsStillNeedAToken) {
  const Response response = get("POST", "/v1/openapi.json");
  EXPECT_EQ(response.status, 401) << response.body;
}

}  // namespace
}  // namespace fabric_chaos::api
