#pragma once
// The HTTP transport (Boost.Beast): accepts connections, enforces limits (body 1 MiB -> 413,
// header size, read/idle timeouts), turns each request into an api::Request, and serves static
// dashboard files under "/". Runs its io_context on its own threads; start() returns once
// listening, stop() closes the acceptor and every session and joins the threads.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/status.h"
#include "server/api/api.h"

namespace fabric_chaos::http {

struct ServerOptions {
  std::string address = "127.0.0.1";
  uint16_t port = 8080;  // 0 = pick a free port (tests)
  int threads = 2;
  size_t body_limit = 1 << 20;
  int read_timeout_ms = 30000;
  std::string web_root;  // directory with index.html; "" = no static files
};

class Server {
 public:
  using Handler = std::function<api::Response(const api::Request&)>;
  static core::Result<std::unique_ptr<Server>> start(const ServerOptions& options, Handler handler);
  virtual ~Server() = default;
  virtual uint16_t port() const = 0;
  virtual void stop() = 0;
};

}  // namespace fabric_chaos::http
