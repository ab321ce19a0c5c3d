#pragma once
// A small synchronous HTTP/1.1 client (Boost.Beast) for talking to agents: one TCP connection per
// request, a deadline covering resolve + connect + write + read, plain http:// only (put TLS in a
// tunnel or a sidecar). Failures to reach the peer come back as kUnavailable naming the URL, so a
// caller can tell "the agent is down" from "the agent said no" (an HTTP error status is not a
// failure here: the response is returned as is). Stateless after construction: thread-safe.

#include <cstdint>
#include <string>

#include "core/http_message.h"
#include "core/status.h"

namespace fabric_chaos::net {

struct Url {
  std::string host;  // "127.0.0.1", "agent-3.lab", "::1" (without brackets)
  uint16_t port = 80;
  std::string base_path;  // "" or "/prefix" (no trailing slash)
};

// "http://host[:port][/prefix]"; anything else is kInvalidArgument saying why.
core::Result<Url> parseHttpUrl(const std::string& url);

class HttpClient {
 public:
  // base_url as accepted by parseHttpUrl; check it with valid() / status().
  HttpClient(std::string base_url, int default_timeout_ms);

  const core::Status& status() const { return status_; }
  const std::string& baseUrl() const { return base_url_; }

  // Sends request.method request.target (appended to the base path) with request.headers and
  // request.body; Content-Type application/json when a body is present and none was given.
  // timeout_ms <= 0 uses the default. The response's headers carry lower-case names.
  core::Result<core::HttpResponse> send(const core::HttpRequest& request, int timeout_ms = 0) const;

 private:
  std::string base_url_;
  int default_timeout_ms_;
  Url url_;
  core::Status status_;
};

}  // namespace fabric_chaos::net
