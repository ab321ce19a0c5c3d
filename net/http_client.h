#pragma once
// A small synchronous HTTP/1.1 client (Boost.Beast) for talking to agents and to a fabric-chaos
// server: one connection per request, a deadline covering resolve + connect + TLS handshake +
// write + read, http:// or https:// (certificates verified against a caller's CA file or the
// system store; `insecure` is an explicit opt-out for self-signed lab certificates). Failures to
// reach the peer come back as kUnavailable naming the URL, so a caller can tell "the agent is
// down" from "the agent said no" (an HTTP error status is not a failure here: the response is
// returned as is). Stateless after construction: thread-safe.

#include <cstdint>
#include <memory>
#include <string>

#include "core/http_message.h"
#include "core/status.h"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace fabric_chaos::net {

struct Url {
  bool tls = false;       // https://
  std::string host;       // "127.0.0.1", "agent-3.lab", "::1" (without brackets)
  uint16_t port = 80;     // 443 by default for https
  std::string base_path;  // "" or "/prefix" (no trailing slash)
};

// "http://host[:port][/prefix]" or "https://..."; anything else is kInvalidArgument saying why.
core::Result<Url> parseHttpUrl(const std::string& url);

// For https:// URLs only.
struct TlsOptions {
  std::string ca_file;    // PEM file of trusted CAs; "" = the system's default store
  bool insecure = false;  // accept any certificate (self-signed lab certificates); never default
  // A client certificate (chain) and its key, PEM, for servers that verify their clients (an
  // agent started with --tls-client-ca); both or neither.
  std::string cert_file = {};
  std::string key_file = {};
};

class HttpClient {
 public:
  // base_url as accepted by parseHttpUrl; check it with status(). An unreadable CA file also
  // shows there.
  HttpClient(std::string base_url, int default_timeout_ms, TlsOptions tls = {});

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
  std::shared_ptr<boost::asio::ssl::context> tls_context_;  // set for https:// only
};

}  // namespace fabric_chaos::net
