#include "server/api/util.h"

#include <limits>

namespace fabric_chaos::api {

using core::Status;
using core::StatusCode;
using nlohmann::json;

std::string dumpJson(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

Response jsonResponse(int status, const json& body) {
  Response response;
  response.status = status;
  response.body = dumpJson(body);
  return response;
}

Response errorBody(int status, const std::string& code, const std::string& message) {
  return jsonResponse(status, json{{"error", {{"code", code}, {"message", message}}}});
}

namespace {

const char* typeName(const json& value) {
  return value.type_name();  // "array", "string", "null", ...
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

core::Result<json> parseJsonObject(const std::string& body) {
  if (body.find_first_not_of(" \t\r\n") == std::string::npos) {
    return Status(StatusCode::kInvalidArgument, "request body is empty; expected a JSON object");
  }
  json doc;
  try {
    doc = json::parse(body);
  } catch (const json::parse_error& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 9: ..."; keep
    // the part after the bracketed id.
    std::string detail = e.what();
    if (size_t pos = detail.find("] "); pos != std::string::npos) detail = detail.substr(pos + 2);
    return Status(StatusCode::kInvalidArgument,
                  "malformed JSON at byte " + std::to_string(e.byte) + ": " + detail);
  } catch (const json::exception& e) {
    // Well-formed text the parser still cannot hold, e.g. 1e400 (out_of_range.406): the
    // caller's input, so a 400, not a 500 (found by fuzz_api).
    std::string detail = e.what();
    if (size_t pos = detail.find("] "); pos != std::string::npos) detail = detail.substr(pos + 2);
    return Status(StatusCode::kInvalidArgument, "request body cannot be decoded: " + detail);
  }
  if (!doc.is_object()) {
    return Status(StatusCode::kInvalidArgument,
                  std::string("request body must be a JSON object, got ") + typeName(doc));
  }
  return doc;
}

core::Result<std::string> percentDecode(const std::string& in, bool plus_is_space) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      int hi = i + 2 < in.size() ? hexValue(in[i + 1]) : -1;
      int lo = i + 2 < in.size() ? hexValue(in[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        return Status(StatusCode::kInvalidArgument,
                      "bad percent-encoding at offset " + std::to_string(i) + " in \"" + in + "\"");
      }
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

core::Result<Target> parseTarget(const std::string& target) {
  Target out;
  std::string path = target;
  std::string query;
  if (size_t q = target.find('?'); q != std::string::npos) {
    path = target.substr(0, q);
    query = target.substr(q + 1);
  }
  if (size_t hash = query.find('#'); hash != std::string::npos) query.resize(hash);
  if (path.empty() || path[0] != '/') {
    return Status(StatusCode::kInvalidArgument,
                  "request target must be an absolute path, got \"" + target + "\"");
  }
  // Empty segments ("//", a trailing "/") are dropped: "/v1/runs/" routes like "/v1/runs".
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (end > start) {
      auto segment = percentDecode(path.substr(start, end - start), false);
      if (!segment) return segment.status();
      out.segments.push_back(std::move(segment.value()));
    }
    start = end + 1;
  }
  size_t pos = 0;
  while (pos < query.size()) {
    size_t end = query.find('&', pos);
    if (end == std::string::npos) end = query.size();
    std::string pair = query.substr(pos, end - pos);
    pos = end + 1;
    if (pair.empty()) continue;
    std::string key = pair;
    std::string value;
    if (size_t eq = pair.find('='); eq != std::string::npos) {
      key = pair.substr(0, eq);
      value = pair.substr(eq + 1);
    }
    auto k = percentDecode(key, true);
    if (!k) return k.status();
    auto v = percentDecode(value, true);
    if (!v) return v.status();
    out.query[k.value()] = v.value();
  }
  return out;
}

core::Result<int64_t> parseInteger(const std::string& text, const std::string& what) {
  auto bad = [&] {
    return Status(StatusCode::kInvalidArgument,
                  what + " must be a non-negative integer, got \"" + text + "\"");
  };
  if (text.empty() || text.size() > 19) return bad();
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return bad();
    int digit = c - '0';
    if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) return bad();
    value = value * 10 + digit;
  }
  return value;
}

}  // namespace fabric_chaos::api
