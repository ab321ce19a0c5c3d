#pragma once
// Request decoding and JSON response helpers shared by the /v1 handlers. Internal to server/api.
// Pure functions; decoding failures come back as kInvalidArgument naming what was wrong (the byte
// position for malformed JSON, the parameter for a bad query value).

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "server/api/api.h"

namespace fabric_chaos::api {

// Serializes without throwing: invalid UTF-8 in strings is replaced, not an exception.
std::string dumpJson(const nlohmann::json& value);

Response jsonResponse(int status, const nlohmann::json& body);

// An error body with a code that has no core::StatusCode (405 METHOD_NOT_ALLOWED, 413...).
Response errorBody(int status, const std::string& code, const std::string& message);

// Parses a request body that must be a JSON object. Malformed JSON is kInvalidArgument naming the
// byte position; a non-object body names the type it got.
core::Result<nlohmann::json> parseJsonObject(const std::string& body);

// "%41b+c" -> "Ab c" when plus_is_space; kInvalidArgument for a truncated or non-hex escape.
core::Result<std::string> percentDecode(const std::string& in, bool plus_is_space);

struct Target {
  std::vector<std::string> segments;  // decoded path segments: "/v1/runs/7" -> {"v1","runs","7"}
  std::map<std::string, std::string> query;  // decoded; the last value of a repeated key wins
};

// Splits "/v1/runs?state=passed" into decoded segments and query parameters.
core::Result<Target> parseTarget(const std::string& target);

// Strict decimal: digits only, no sign, no spaces, fits int64; otherwise kInvalidArgument naming
// `what` and quoting the text.
core::Result<int64_t> parseInteger(const std::string& text, const std::string& what);

}  // namespace fabric_chaos::api
