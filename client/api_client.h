#pragma once
// The CI client's view of the REST API (docs/api.md): one call = one request with the bearer
// token, answered as (HTTP status, JSON body). Only an unreachable server or a reply that is not
// JSON is a Status; an HTTP error status is returned as is, so the caller can say "401: ...".
// The real client is synchronous and stateless (thread-safe); the follow loop is tested with a
// fake.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"
#include "net/http_client.h"

namespace fabric_chaos::client {

struct ApiReply {
  int http_status = 0;
  nlohmann::json body;  // null when the reply had no body

  bool ok() const { return http_status >= 200 && http_status < 300; }
};

class ApiClient {
 public:
  virtual ~ApiClient() = default;
  // method "GET"/"POST", target "/v1/runs/3"; body nullptr = no body.
  virtual core::Result<ApiReply> call(const std::string& method, const std::string& target,
                                      const nlohmann::json* body) = 0;
  // "http://127.0.0.1:8080" (no trailing slash): used to print run URLs.
  virtual std::string baseUrl() const = 0;
};

// Over net::HttpClient. An empty token sends no Authorization header (servers run --no-auth).
// A bad URL or an unreadable CA file shows up as the Status of the first call().
std::unique_ptr<ApiClient> makeHttpApiClient(const std::string& base_url, const std::string& token,
                                             int timeout_ms, net::TlsOptions tls = {});

// The Status for an error reply: code from the HTTP status, message "HTTP 401 UNAUTHENTICATED:
// unknown token" (the server's own words), prefixed by `what`. origin = the HTTP status.
core::Status replyError(const ApiReply& reply, const std::string& what);

}  // namespace fabric_chaos::client
