#pragma once
// The HTTP transport (Boost.Beast, optionally TLS via OpenSSL): accepts connections, enforces
// limits (body 1 MiB -> 413, header 16 KiB -> 431, connections -> 503, read/idle timeouts), turns
// each request into an api::Request, writes event streams (text/event-stream) and serves static
// dashboard files under "/". Runs its io_context on its own threads, and the API handlers and the
// streams' reads on a pool beside them, so that a handler waiting for the store never holds a
// socket's thread. start() fails with a Status naming the address or the unusable
// certificate/key, returns once listening; stop() closes the acceptor, every session and every
// event stream, and joins the threads.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "server/api/api.h"

namespace fabric_chaos::http {

struct ServerOptions {
  std::string address = "127.0.0.1";
  uint16_t port = 8080;     // 0 = pick a free port (tests)
  int threads = 2;          // I/O threads: sockets, TLS, parsing; never a handler
  int handler_threads = 4;  // run the API handlers
  // Bulk reads (a run's samples, a stream's next page): their own threads, under SCHED_IDLE when
  // bulk_idle_priority, so that however many readers pull them, the other requests and the
  // workload keep their CPU.
  int bulk_threads = 2;
  bool bulk_idle_priority = true;
  std::function<bool(const api::Request&)> is_bulk;  // null: nothing but streams is bulk
  // Answered on the I/O thread, not queued behind the handlers: liveness probes.
  std::vector<std::string> inline_paths = {"/healthz"};
  size_t body_limit = 1 << 20;
  int read_timeout_ms = 30000;  // to read one request once it has started
  int idle_timeout_ms = 60000;  // keep-alive connection with no request in flight
  int max_connections = 64;     // more are answered 503 and closed
  std::string tls_cert_file;    // both set = HTTPS (PEM files); both empty = plain HTTP
  std::string tls_key_file;
  // With TLS: a PEM file of CAs; set = every client must present a certificate one of them
  // signed (the handshake fails otherwise), so only holders of such a certificate get in.
  std::string tls_client_ca_file = {};
  std::string web_root;  // directory with index.html; "" = no static files
};

class Server {
 public:
  using Handler = std::function<api::Response(const api::Request&)>;
  // Called first for every request: a stream to write as text/event-stream, or nullptr with
  // *refusal at status 0 (not a stream: call the Handler) or set (answer it).
  using StreamOpener = std::function<std::unique_ptr<core::EventStream>(const api::Request&,
                                                                        api::Response* refusal)>;
  static core::Result<std::unique_ptr<Server>> start(const ServerOptions& options, Handler handler,
                                                     StreamOpener streams = nullptr);
  virtual ~Server() = default;
  virtual uint16_t port() const = 0;
  virtual void stop() = 0;
};

}  // namespace fabric_chaos::http
