// The Beast transport: one acceptor, one Session per connection, every Session on its own strand.
// Session is one template over the stream type (plain beast::tcp_stream or ssl_stream over it), so
// HTTP and HTTPS share every line of request handling. This is the only translation unit that
// includes Beast (it compiles slowly). Network calls use the error_code forms only; an exception
// from the handler or the stream opener becomes a 500, one from an event stream ends that stream.
//
// stop() must not be called from the handler (it joins the threads that run it).

#include "server/http/server.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "server/api/util.h"
#include "server/http/static_files.h"
#include "server/http/worker_pool.h"

namespace fabric_chaos::http {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;
using core::Status;
using core::StatusCode;
using Clock = std::chrono::steady_clock;

using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

constexpr uint32_t kHeaderLimit = 16 * 1024;
// After an error response to a request we did not read to the end (413, 431, 400, 503), keep
// reading and discarding for a while so that closing does not reset the connection before the
// client has read the response.
constexpr auto kLingerTime = std::chrono::seconds(2);
constexpr size_t kLingerBytes = 16 << 20;
constexpr auto kAcceptRetry = std::chrono::milliseconds(100);
// Waiting for the peer's close_notify is a courtesy; a client that never sends it must not hold
// its connection slot for long.
constexpr auto kTlsShutdownTime = std::chrono::seconds(2);
// Connections over the limit still cost a socket while they are told 503; beyond this many of
// those at once, further ones are closed without an answer.
constexpr int kMaxRefusing = 64;
// Proxies and browsers drop silent connections; an event stream with nothing to say sends a
// comment at least this often (or at half the idle timeout, when that is shorter).
constexpr auto kStreamKeepAlive = std::chrono::seconds(15);
constexpr int kMinPollMs = 10;
constexpr int kMaxPollMs = 60000;
constexpr char kServerName[] = "fabric-chaos";

Status statusFromError(const beast::error_code& ec, const std::string& what) {
  if (ec.category() == boost::system::system_category()) return core::errnoStatus(ec.value(), what);
  return Status(StatusCode::kInternal, what + ": " + ec.message());
}

bool isHttpParseError(const beast::error_code& ec) {
  return ec.category() == beast::error_code(bhttp::error::bad_target).category();
}

// The TLS handshake failed because the client spoke plain HTTP to the HTTPS port.
bool isPlainHttpOnTlsPort(const beast::error_code& ec) {
  return ec.category() == net::error::get_ssl_category() &&
         ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == SSL_R_HTTP_REQUEST;
}

std::string lower(beast::string_view s) {
  std::string out(s.data(), s.size());
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string hex(size_t n) {
  char text[32];
  std::snprintf(text, sizeof text, "%zx", n);
  return text;
}

// Whether `path` can be opened for reading, with errno's words when not: OpenSSL's own message
// for a missing file ("system lib") says less than strerror does.
Status checkReadable(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) {
    return Status(StatusCode::kInvalidArgument,
                  "cannot load TLS " + what + " " + path + ": " + std::strerror(errno));
  }
  return Status::ok();
}

class SessionBase {
 public:
  virtual ~SessionBase() = default;
  virtual void start() = 0;
  // From any thread: closes the connection, which cancels whatever is pending on it.
  virtual void cancel() = 0;
};

class ServerImpl;

template <class Stream>
class Session : public SessionBase, public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

 public:
  // `admitted` false: the server is at its connection limit; this session only answers 503.
  template <class... StreamArgs>
  Session(ServerImpl* server, bool admitted, StreamArgs&&... stream_args);
  ~Session() override;

  void start() override {
    net::dispatch(stream_.get_executor(),
                  beast::bind_front_handler(&Session::onStart, this->shared_from_this()));
  }

  void cancel() override {
    net::dispatch(stream_.get_executor(), [self = this->shared_from_this()] { self->closeNow(); });
  }

 private:
  beast::tcp_stream& tcp() { return beast::get_lowest_layer(stream_); }
  std::chrono::milliseconds readTimeout() const;
  std::chrono::milliseconds idleTimeout() const;

  void onStart();
  void onHandshake(beast::error_code ec);
  void refusePlainHttp();
  void begin();
  void waitForRequest();
  void onRequestBytes(beast::error_code ec, size_t bytes);
  void readHeader();
  void onHeader(beast::error_code ec, size_t bytes);
  void readBody();
  void onRead(beast::error_code ec, size_t bytes);
  void handleRequest(bhttp::request<bhttp::string_body>&& request);
  // What answers a request: an event stream to start, or a response.
  struct Answer {
    std::shared_ptr<core::EventStream> events;
    api::Response response;
  };
  Answer answer(const api::Request& request, bool get_or_head);
  void deliver(Answer answer, unsigned version, bool keep_alive, bool head_only);
  void send(api::Response response, unsigned version, bool keep_alive, bool head_only, bool linger);
  void onWrite(bool keep_alive, bool linger, beast::error_code ec, size_t bytes);
  void finish();
  void lingeringClose();
  void drain();
  void closeNow();

  // Event streams (text/event-stream).
  void startEventStream(std::shared_ptr<core::EventStream> events, unsigned version);
  void watchForDisconnect();
  void armTimer(Clock::duration after, bool close_on_fire);
  void endEventStream();
  void tick();
  void onNext(core::EventStream::Chunk chunk);
  void writeChunk(std::string text, bool last);
  void onChunkWritten(bool last, beast::error_code ec);

  Stream stream_;
  ServerImpl* server_;
  const bool admitted_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::optional<bhttp::response<bhttp::empty_body>> continue_;
  std::shared_ptr<bhttp::response<bhttp::string_body>> response_;
  std::vector<char> drain_buffer_;
  size_t drained_ = 0;
  bool closing_ = false;
  std::string raw_reply_;

  net::steady_timer timer_;
  // Shared with a next() running on the handler pool, so that closeNow() cannot free it under it.
  std::shared_ptr<core::EventStream> events_;
  std::optional<bhttp::response<bhttp::empty_body>> stream_header_;
  std::optional<bhttp::response_serializer<bhttp::empty_body>> stream_serializer_;
  bool chunked_ = true;
  uint64_t timer_generation_ = 0;
  Clock::time_point last_write_;
  std::string chunk_out_;
  std::array<char, 512> watch_buffer_{};
};

class ServerImpl : public Server {
 public:
  ServerImpl(const ServerOptions& options, Handler handler, StreamOpener streams)
      : options_(options),
        handler_(std::move(handler)),
        streams_(std::move(streams)),
        ioc_(std::max(1, options.threads)),
        acceptor_(net::make_strand(ioc_)),
        retry_timer_(acceptor_.get_executor()),
        handlers_(std::max(1, options.handler_threads), WorkerPool::Priority::kNormal),
        bulk_handlers_(std::max(1, options.bulk_threads), options.bulk_idle_priority
                                                              ? WorkerPool::Priority::kIdle
                                                              : WorkerPool::Priority::kNormal) {}

  ~ServerImpl() override { stop(); }

  Status loadTls() {
    const std::string& cert = options_.tls_cert_file;
    const std::string& key = options_.tls_key_file;
    if (cert.empty() && key.empty()) {
      if (options_.tls_client_ca_file.empty()) return Status::ok();
      return Status(StatusCode::kInvalidArgument,
                    "client certificates (" + options_.tls_client_ca_file +
                        ") need TLS: give the server a certificate and key too");
    }
    if (cert.empty() || key.empty()) {
      return Status(StatusCode::kInvalidArgument,
                    std::string("TLS needs both a certificate and a private key; got only the ") +
                        (cert.empty() ? "key " + key : "certificate " + cert));
    }
    if (Status st = checkReadable(cert, "certificate"); !st.isOk()) return st;
    if (Status st = checkReadable(key, "private key"); !st.isOk()) return st;
    tls_.emplace(ssl::context::tls_server);
    tls_->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                      ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                      ssl::context::single_dh_use);
    beast::error_code ec;
    tls_->use_certificate_chain_file(cert, ec);
    if (ec) {
      return Status(StatusCode::kInvalidArgument,
                    "cannot load TLS certificate " + cert + ": " + ec.message());
    }
    tls_->use_private_key_file(key, ssl::context::pem, ec);
    if (ec &&
        ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH) {
      return Status(StatusCode::kInvalidArgument,
                    "TLS private key " + key + " does not match certificate " + cert);
    }
    if (ec) {
      return Status(StatusCode::kInvalidArgument,
                    "cannot load TLS private key " + key + ": " + ec.message());
    }
    if (SSL_CTX_check_private_key(tls_->native_handle()) != 1) {
      return Status(StatusCode::kInvalidArgument,
                    "TLS private key " + key + " does not match certificate " + cert);
    }
    return requireClientCertificates();
  }

  Status requireClientCertificates() {
    const std::string& ca = options_.tls_client_ca_file;
    if (ca.empty()) return Status::ok();
    if (Status st = checkReadable(ca, "client CA file"); !st.isOk()) return st;
    beast::error_code ec;
    tls_->load_verify_file(ca, ec);
    if (ec) {
      return Status(StatusCode::kInvalidArgument,
                    "cannot load client CA file " + ca + ": " + ec.message());
    }
    tls_->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
    return Status::ok();
  }

  Status listen() {
    const std::string where = options_.address + ":" + std::to_string(options_.port);
    beast::error_code ec;
    auto address = net::ip::make_address(options_.address, ec);
    if (ec) {
      return Status(StatusCode::kInvalidArgument,
                    "cannot listen on " + where + ": bad address: " + ec.message());
    }
    tcp::endpoint endpoint(address, options_.port);
    acceptor_.open(endpoint.protocol(), ec);
    if (ec) return statusFromError(ec, "cannot listen on " + where + ": socket");
    acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (ec) return statusFromError(ec, "cannot listen on " + where + ": setsockopt");
    acceptor_.bind(endpoint, ec);
    if (ec) return statusFromError(ec, "cannot listen on " + where + ": bind");
    acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) return statusFromError(ec, "cannot listen on " + where + ": listen");
    tcp::endpoint local = acceptor_.local_endpoint(ec);
    if (ec) return statusFromError(ec, "cannot listen on " + where + ": getsockname");
    port_ = local.port();
    return Status::ok();
  }

  void run() {
    work_.emplace(net::make_work_guard(ioc_));
    net::dispatch(acceptor_.get_executor(), [this] { doAccept(); });
    const int threads = std::max(1, options_.threads);
    threads_.reserve(threads);
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this] {
        for (;;) {
          try {
            ioc_.run();
            return;
          } catch (const std::exception& e) {
            // A completion handler threw (allocation failure...): log and keep serving.
            std::fprintf(stderr, "fabric-chaos http: unexpected exception: %s\n", e.what());
          }
        }
      });
    }
  }

  uint16_t port() const override { return port_; }

  void stop() override {
    std::vector<std::shared_ptr<SessionBase>> sessions;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;
      stopped_ = true;
      for (auto& [key, weak] : sessions_) {
        if (auto session = weak.lock()) sessions.push_back(std::move(session));
      }
      sessions_.clear();
    }
    net::dispatch(acceptor_.get_executor(), [this] {
      beast::error_code ec;
      retry_timer_.cancel();
      acceptor_.close(ec);
    });
    for (auto& session : sessions) session->cancel();
    sessions.clear();
    // Handlers in progress finish and post their answers to closed sessions, which drop them;
    // the I/O threads still run those posts.
    handlers_.join();
    bulk_handlers_.join();
    // Closed sockets and cancelled timers complete their handlers, which drops the last
    // references to the sessions (and their event streams) before the threads return.
    work_.reset();
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
    threads_.clear();
  }

  const ServerOptions& options() const { return options_; }

  // Runs f on a handler pool: API handlers and event streams' reads, which may wait for the
  // store, never hold an I/O thread. Bulk reads (ServerOptions::is_bulk, and every stream's
  // next()) go to their own pool, at a lower priority, so that they neither delay the other
  // requests nor take the CPU from the workload.
  template <typename F>
  void offload(bool bulk, F&& f) {
    (bulk ? bulk_handlers_ : handlers_).post(std::forward<F>(f));
  }
  bool isBulk(const api::Request& request) const {
    return options_.is_bulk && options_.is_bulk(request);
  }

  // Paths answered on the I/O thread itself: cheap, and they must answer while every handler
  // is busy.
  bool answersInline(const std::string& target) const {
    const std::string path = target.substr(0, target.find('?'));
    return std::find(options_.inline_paths.begin(), options_.inline_paths.end(), path) !=
           options_.inline_paths.end();
  }
  bool stopping() {
    std::lock_guard<std::mutex> lock(mu_);
    return stopped_;
  }

  // Runs the handler, turning an exception into a 500 so that it never reaches Asio.
  api::Response call(const api::Request& request) {
    try {
      return handler_(request);
    } catch (const std::exception& e) {
      return api::errorResponse(
          Status(StatusCode::kInternal, std::string("internal error: ") + e.what()));
    } catch (...) {
      return api::errorResponse(Status(StatusCode::kInternal, "internal error"));
    }
  }

  // The stream opener, with the same exception guard; *refusal is status 0 when not a stream.
  std::unique_ptr<core::EventStream> openStream(const api::Request& request,
                                                api::Response* refusal) {
    refusal->status = 0;
    if (!streams_) return nullptr;
    try {
      return streams_(request, refusal);
    } catch (const std::exception& e) {
      *refusal = api::errorResponse(
          Status(StatusCode::kInternal, std::string("internal error: ") + e.what()));
    } catch (...) {
      *refusal = api::errorResponse(Status(StatusCode::kInternal, "internal error"));
    }
    return nullptr;
  }

  void sessionEnded(bool admitted) {
    if (admitted) {
      active_.fetch_sub(1);
    } else {
      refusing_.fetch_sub(1);
    }
  }

 private:
  void doAccept() {
    acceptor_.async_accept(net::make_strand(ioc_),
                           beast::bind_front_handler(&ServerImpl::onAccept, this));
  }

  void onAccept(beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec) {
      // EMFILE and friends: back off instead of spinning.
      retry_timer_.expires_after(kAcceptRetry);
      retry_timer_.async_wait([this](beast::error_code wait_ec) {
        if (!wait_ec && acceptor_.is_open()) doAccept();
      });
      return;
    }
    const bool admitted = active_.load() < options_.max_connections;
    if (!admitted && refusing_.load() >= kMaxRefusing) {
      doAccept();  // the socket closes here, unanswered
      return;
    }
    (admitted ? active_ : refusing_).fetch_add(1);
    std::shared_ptr<SessionBase> session;
    if (tls_) {
      session = std::make_shared<Session<TlsStream>>(this, admitted, std::move(socket), *tls_);
    } else {
      session = std::make_shared<Session<PlainStream>>(this, admitted, std::move(socket));
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;  // the socket closes with the session
      // Forget sessions that have ended, so the registry does not grow with every connection.
      for (auto it = sessions_.begin(); it != sessions_.end();) {
        it = it->second.expired() ? sessions_.erase(it) : std::next(it);
      }
      sessions_.emplace(session.get(), session);
    }
    session->start();
    doAccept();
  }

  const ServerOptions options_;
  const Handler handler_;
  const StreamOpener streams_;
  // Declared before ioc_: sessions still queued in ioc_ at destruction report to them.
  std::atomic<int> active_{0};
  std::atomic<int> refusing_{0};
  std::optional<ssl::context> tls_;
  net::io_context ioc_;
  tcp::acceptor acceptor_;
  net::steady_timer retry_timer_;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;
  uint16_t port_ = 0;
  std::mutex mu_;
  bool stopped_ = false;
  std::map<SessionBase*, std::weak_ptr<SessionBase>> sessions_;
  // Declared last, so destroyed first: work still queued holds sessions, whose destructors
  // report to the members above.
  WorkerPool handlers_;
  WorkerPool bulk_handlers_;
};

template <class Stream>
template <class... StreamArgs>
Session<Stream>::Session(ServerImpl* server, bool admitted, StreamArgs&&... stream_args)
    : stream_(std::forward<StreamArgs>(stream_args)...),
      server_(server),
      admitted_(admitted),
      timer_(beast::get_lowest_layer(stream_).get_executor()) {}

template <class Stream>
Session<Stream>::~Session() {
  server_->sessionEnded(admitted_);
}

template <class Stream>
std::chrono::milliseconds Session<Stream>::readTimeout() const {
  return std::chrono::milliseconds(std::max(1, server_->options().read_timeout_ms));
}

template <class Stream>
std::chrono::milliseconds Session<Stream>::idleTimeout() const {
  return std::chrono::milliseconds(std::max(1, server_->options().idle_timeout_ms));
}

template <class Stream>
void Session<Stream>::onStart() {
  if (closing_) return;
  if constexpr (kTls) {
    tcp().expires_after(readTimeout());
    stream_.async_handshake(
        ssl::stream_base::server,
        beast::bind_front_handler(&Session::onHandshake, this->shared_from_this()));
  } else {
    begin();
  }
}

template <class Stream>
void Session<Stream>::onHandshake(beast::error_code ec) {
  if (closing_ || ec == net::error::operation_aborted) return;
  if (ec) {
    if (isPlainHttpOnTlsPort(ec)) return refusePlainHttp();
    closeNow();  // a scanner, a timeout or a client that rejected our certificate
    return;
  }
  begin();
}

// Plain HTTP on the HTTPS port gets a plain-HTTP 400 that says so, instead of a reset.
template <class Stream>
void Session<Stream>::refusePlainHttp() {
  const std::string body =
      api::errorBody(400, "BAD_REQUEST",
                     "this port serves HTTPS; plain HTTP is not accepted (use https://)")
          .body;
  raw_reply_ =
      "HTTP/1.1 400 Bad Request\r\nServer: " + std::string(kServerName) +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\nConnection: close\r\n\r\n" + body;
  tcp().expires_after(readTimeout());
  net::async_write(tcp(), net::buffer(raw_reply_),
                   [self = this->shared_from_this()](beast::error_code ec, size_t) {
                     if (ec || self->closing_) return self->closeNow();
                     self->lingeringClose();
                   });
}

template <class Stream>
void Session<Stream>::begin() {
  if (!admitted_) {
    const int limit = server_->options().max_connections;
    return send(api::errorBody(503, "UNAVAILABLE",
                               "too many connections (limit " + std::to_string(limit) + ")"),
                11, false, false, true);
  }
  readHeader();  // the first request: the read timeout runs from the connection's start
}

// Between requests on a keep-alive connection: the idle timeout applies until the next request's
// first bytes arrive, then the read timeout.
template <class Stream>
void Session<Stream>::waitForRequest() {
  if (closing_) return;
  if (buffer_.size() > 0) return readHeader();  // pipelined: the next request is already here
  tcp().expires_after(idleTimeout());
  stream_.async_read_some(
      buffer_.prepare(4096),
      beast::bind_front_handler(&Session::onRequestBytes, this->shared_from_this()));
}

template <class Stream>
void Session<Stream>::onRequestBytes(beast::error_code ec, size_t bytes) {
  buffer_.commit(bytes);
  if (closing_ || ec == net::error::operation_aborted) return;
  if (ec) {
    // The client closed between requests, or stayed idle too long.
    closeNow();
    return;
  }
  readHeader();
}

template <class Stream>
void Session<Stream>::readHeader() {
  if (closing_) return;
  parser_.emplace();
  parser_->body_limit(server_->options().body_limit);
  parser_->header_limit(kHeaderLimit);
  tcp().expires_after(readTimeout());
  // The header first, so that a client waiting for "100 Continue" (curl does, for bodies over
  // 1 KiB) is answered before it sends the body; an oversized Content-Length fails right here.
  bhttp::async_read_header(stream_, buffer_, *parser_,
                           beast::bind_front_handler(&Session::onHeader, this->shared_from_this()));
}

template <class Stream>
void Session<Stream>::onHeader(beast::error_code ec, size_t bytes) {
  if (ec || parser_->is_done()) return onRead(ec, bytes);
  if (beast::iequals(parser_->get()[bhttp::field::expect], "100-continue")) {
    continue_.emplace(bhttp::status::continue_, parser_->get().version());
    continue_->set(bhttp::field::server, kServerName);
    bhttp::async_write(stream_, *continue_,
                       [self = this->shared_from_this()](beast::error_code write_ec, size_t) {
                         self->continue_.reset();
                         if (write_ec) return self->onRead(write_ec, 0);
                         self->readBody();
                       });
    return;
  }
  readBody();
}

template <class Stream>
void Session<Stream>::readBody() {
  bhttp::async_read(stream_, buffer_, *parser_,
                    beast::bind_front_handler(&Session::onRead, this->shared_from_this()));
}

template <class Stream>
void Session<Stream>::onRead(beast::error_code ec, size_t) {
  if (closing_ || ec == net::error::operation_aborted) return;
  if (ec == bhttp::error::end_of_stream) {
    // The client closed before sending anything.
    closeNow();
    return;
  }
  if (ec == bhttp::error::body_limit) {
    return send(api::errorBody(413, "PAYLOAD_TOO_LARGE",
                               "request body is larger than the limit of " +
                                   std::to_string(server_->options().body_limit) + " bytes"),
                11, false, false, true);
  }
  if (ec == bhttp::error::header_limit) {
    return send(api::errorBody(431, "HEADER_TOO_LARGE",
                               "request header is larger than the limit of " +
                                   std::to_string(kHeaderLimit) + " bytes"),
                11, false, false, true);
  }
  if (ec && isHttpParseError(ec) && ec != bhttp::error::partial_message) {
    return send(api::errorBody(400, "BAD_REQUEST", "malformed HTTP request: " + ec.message()), 11,
                false, false, true);
  }
  if (ec) {
    // Timeout, reset, or the client went away mid-request: nothing useful to answer.
    closeNow();
    return;
  }
  handleRequest(parser_->release());
}

template <class Stream>
void Session<Stream>::handleRequest(bhttp::request<bhttp::string_body>&& request) {
  const bool head_only = request.method() == bhttp::verb::head;
  const bool keep_alive = request.keep_alive() && !server_->stopping();
  const std::string target(request.target().data(), request.target().size());

  api::Request api_request;
  // HEAD is GET without the body.
  api_request.method = head_only ? "GET" : std::string(request.method_string());
  api_request.target = target;
  for (const auto& field : request) {
    std::string name = lower(field.name_string());
    std::string value(field.value().data(), field.value().size());
    auto [it, inserted] = api_request.headers.emplace(name, value);
    if (!inserted) it->second += ", " + value;
  }
  api_request.body = std::move(request.body());
  beast::error_code peer_ec;
  const auto peer = tcp().socket().remote_endpoint(peer_ec);
  if (!peer_ec) api_request.peer = peer.address().to_string();

  const unsigned version = request.version();
  const bool get_or_head = request.method() == bhttp::verb::get || head_only;
  if (server_->answersInline(target)) {
    return deliver(answer(api_request, get_or_head), version, keep_alive, head_only);
  }
  const bool bulk = server_->isBulk(api_request);
  server_->offload(bulk, [self = this->shared_from_this(), api_request = std::move(api_request),
                          version, keep_alive, head_only, get_or_head]() mutable {
    Answer out = self->answer(api_request, get_or_head);
    net::post(self->stream_.get_executor(),
              [self, out = std::move(out), version, keep_alive, head_only]() mutable {
                self->deliver(std::move(out), version, keep_alive, head_only);
              });
  });
}

// On the handler pool (or inline): touches no session state, only the request and the server.
template <class Stream>
typename Session<Stream>::Answer Session<Stream>::answer(const api::Request& request,
                                                         bool get_or_head) {
  Answer out;
  api::Response refusal;
  if (auto events = server_->openStream(request, &refusal)) {
    out.events = std::move(events);
    return out;
  }
  if (refusal.status != 0) {
    out.response = std::move(refusal);
    return out;
  }
  if (!server_->options().web_root.empty() && !isApiPath(request.target)) {
    if (!get_or_head) {
      out.response = api::errorBody(
          405, "METHOD_NOT_ALLOWED",
          "method " + request.method + " is not allowed on static files; allowed: GET, HEAD");
      out.response.headers.emplace_back("Allow", "GET, HEAD");
    } else if (auto file = readStaticFile(server_->options().web_root, request.target)) {
      out.response.status = 200;
      out.response.content_type = file->content_type;
      out.response.body = std::move(file->body);
    } else {
      out.response = api::errorResponse(file.status());
    }
    return out;
  }
  out.response = server_->call(request);
  return out;
}

// On the session's strand.
template <class Stream>
void Session<Stream>::deliver(Answer answer, unsigned version, bool keep_alive, bool head_only) {
  if (closing_) return;  // the server stopped, or the client went, while the handler ran
  if (answer.events) {
    if (!head_only) return startEventStream(std::move(answer.events), version);
    api::Response head;
    head.content_type = "text/event-stream";
    head.headers.emplace_back("Cache-Control", "no-cache");
    return send(std::move(head), version, false, true, false);
  }
  send(std::move(answer.response), version, keep_alive && !server_->stopping(), head_only, false);
}

template <class Stream>
void Session<Stream>::send(api::Response response, unsigned version, bool keep_alive,
                           bool head_only, bool linger) {
  auto message = std::make_shared<bhttp::response<bhttp::string_body>>();
  message->version(version == 10 ? 10 : 11);
  message->result(static_cast<unsigned>(response.status));
  message->set(bhttp::field::server, kServerName);
  for (const auto& [name, value] : response.headers) message->insert(name, value);
  // 1xx, 204 and 304 carry no body and, per RFC 9110, no Content-Length.
  const bool no_body =
      response.status / 100 == 1 || response.status == 204 || response.status == 304;
  if (!no_body) {
    if (!response.content_type.empty()) {
      message->set(bhttp::field::content_type, response.content_type);
    }
    message->content_length(response.body.size());
    if (!head_only) message->body() = std::move(response.body);
  }
  message->keep_alive(keep_alive);
  response_ = std::move(message);
  tcp().expires_after(readTimeout());
  bhttp::async_write(
      stream_, *response_,
      beast::bind_front_handler(&Session::onWrite, this->shared_from_this(), keep_alive, linger));
}

template <class Stream>
void Session<Stream>::onWrite(bool keep_alive, bool linger, beast::error_code ec, size_t) {
  response_.reset();
  if (closing_ || ec) {
    closeNow();
    return;
  }
  if (linger) return lingeringClose();
  if (!keep_alive) return finish();
  waitForRequest();
}

// The end of a connection after a complete response.
template <class Stream>
void Session<Stream>::finish() {
  if constexpr (kTls) {
    tcp().expires_after(kTlsShutdownTime);
    stream_.async_shutdown(
        [self = this->shared_from_this()](beast::error_code) { self->closeNow(); });
  } else {
    beast::error_code ignored;
    tcp().socket().shutdown(tcp::socket::shutdown_send, ignored);
    // The socket closes when the last reference to the session goes, i.e. now.
  }
}

// Reads the raw socket (under TLS too: the bytes are discarded anyway).
template <class Stream>
void Session<Stream>::lingeringClose() {
  beast::error_code ignored;
  tcp().socket().shutdown(tcp::socket::shutdown_send, ignored);
  tcp().expires_after(kLingerTime);
  drain_buffer_.resize(16 * 1024);
  drain();
}

template <class Stream>
void Session<Stream>::drain() {
  tcp().async_read_some(net::buffer(drain_buffer_),
                        [self = this->shared_from_this()](beast::error_code ec, size_t bytes) {
                          self->drained_ += bytes;
                          if (ec || self->closing_ || self->drained_ > kLingerBytes) {
                            self->closeNow();
                            return;
                          }
                          self->drain();
                        });
}

template <class Stream>
void Session<Stream>::closeNow() {
  closing_ = true;
  timer_.cancel();
  events_.reset();  // frees the stream (and what it holds) as soon as the connection is gone
  beast::error_code ec;
  tcp().socket().shutdown(tcp::socket::shutdown_both, ec);
  tcp().close();
}

// --- event streams -------------------------------------------------------------------------
// One chain of timer waits calls next() and writes what it returns; a read that runs alongside
// notices a client that went away. Both run on the session's strand. The connection closes when
// the stream is done: clients (EventSource) reconnect on their own.

template <class Stream>
void Session<Stream>::startEventStream(std::shared_ptr<core::EventStream> events,
                                       unsigned version) {
  events_ = std::move(events);
  chunked_ = version != 10;  // HTTP/1.0 has no chunks: the body ends when the connection does
  stream_header_.emplace(bhttp::status::ok, version == 10 ? 10 : 11);
  stream_header_->set(bhttp::field::server, kServerName);
  stream_header_->set(bhttp::field::content_type, "text/event-stream");
  stream_header_->set(bhttp::field::cache_control, "no-cache");
  stream_header_->keep_alive(false);
  if (chunked_) stream_header_->chunked(true);
  stream_serializer_.emplace(*stream_header_);
  tcp().expires_after(readTimeout());
  bhttp::async_write_header(stream_, *stream_serializer_,
                            [self = this->shared_from_this()](beast::error_code ec, size_t) {
                              if (ec || self->closing_) return self->closeNow();
                              // From here on the session's own timer bounds writes; the stream's
                              // deadline would also cut the read that watches for a disconnect.
                              self->tcp().expires_never();
                              self->last_write_ = Clock::now();
                              self->watchForDisconnect();
                              self->tick();
                            });
}

template <class Stream>
void Session<Stream>::watchForDisconnect() {
  stream_.async_read_some(net::buffer(watch_buffer_),
                          [self = this->shared_from_this()](beast::error_code ec, size_t) {
                            if (self->closing_) return;
                            if (ec) return self->closeNow();  // EOF or reset: the client is gone
                            self->watchForDisconnect();       // whatever it sent is ignored
                          });
}

template <class Stream>
void Session<Stream>::armTimer(Clock::duration after, bool close_on_fire) {
  const uint64_t generation = ++timer_generation_;
  timer_.expires_after(after);
  timer_.async_wait(
      [self = this->shared_from_this(), generation, close_on_fire](beast::error_code ec) {
        if (ec || self->closing_ || generation != self->timer_generation_) return;
        if (close_on_fire) return self->closeNow();  // a write deadline or the final linger
        self->tick();
      });
}

template <class Stream>
void Session<Stream>::tick() {
  if (closing_ || !events_) return;
  server_->offload(true, [self = this->shared_from_this(), events = events_] {
    core::EventStream::Chunk chunk;
    try {
      chunk = events->next();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fabric-chaos http: event stream failed: %s\n", e.what());
      chunk = {};
      chunk.done = true;
    } catch (...) {
      chunk = {};
      chunk.done = true;
    }
    net::post(self->stream_.get_executor(),
              [self, chunk = std::move(chunk)]() mutable { self->onNext(std::move(chunk)); });
  });
}

// On the strand, with what next() returned on the handler pool.
template <class Stream>
void Session<Stream>::onNext(core::EventStream::Chunk chunk) {
  if (closing_ || !events_) return;
  const auto idle_half = idleTimeout() / 2;
  const Clock::duration keep_alive = std::min<Clock::duration>(
      kStreamKeepAlive, std::max<Clock::duration>(idle_half, std::chrono::milliseconds(1)));
  if (chunk.text.empty() && Clock::now() - last_write_ >= keep_alive) {
    chunk.text = ": keep-alive\n\n";
  }
  if (!chunk.text.empty() || chunk.done) return writeChunk(std::move(chunk.text), chunk.done);
  const int poll_ms = std::clamp(events_->pollIntervalMs(), kMinPollMs, kMaxPollMs);
  armTimer(std::chrono::milliseconds(poll_ms), false);
}

// The body is complete: the client closes (the watching read then closes our side) or, after a
// while, we do. No TLS close_notify here: it would need a second read alongside the watching one.
template <class Stream>
void Session<Stream>::endEventStream() {
  events_.reset();
  if constexpr (!kTls) {
    beast::error_code ignored;
    tcp().socket().shutdown(tcp::socket::shutdown_send, ignored);
  }
  armTimer(kLingerTime, true);
}

template <class Stream>
void Session<Stream>::writeChunk(std::string text, bool last) {
  if (chunked_) {
    chunk_out_.clear();
    if (!text.empty()) chunk_out_ = hex(text.size()) + "\r\n" + text + "\r\n";
    if (last) chunk_out_ += "0\r\n\r\n";
  } else {
    chunk_out_ = std::move(text);
  }
  if (chunk_out_.empty()) return onChunkWritten(last, {});
  armTimer(readTimeout(), true);
  net::async_write(stream_, net::buffer(chunk_out_),
                   [self = this->shared_from_this(), last](beast::error_code ec, size_t) {
                     self->onChunkWritten(last, ec);
                   });
}

template <class Stream>
void Session<Stream>::onChunkWritten(bool last, beast::error_code ec) {
  last_write_ = Clock::now();
  if (closing_ || ec) return closeNow();
  if (last) return endEventStream();
  const int poll_ms = std::clamp(events_->pollIntervalMs(), kMinPollMs, kMaxPollMs);
  armTimer(std::chrono::milliseconds(poll_ms), false);
}

}  // namespace

core::Result<std::unique_ptr<Server>> Server::start(const ServerOptions& options, Handler handler,
                                                    StreamOpener streams) {
  if (!handler) return Status(StatusCode::kInvalidArgument, "http server needs a handler");
  if (options.max_connections < 1) {
    return Status(StatusCode::kInvalidArgument, "http server max_connections must be at least 1");
  }
  auto server = std::make_unique<ServerImpl>(options, std::move(handler), std::move(streams));
  if (Status st = server->loadTls(); !st.isOk()) return st;
  if (Status st = server->listen(); !st.isOk()) return st;
  server->run();
  return std::unique_ptr<Server>(std::move(server));
}

}  // namespace fabric_chaos::http
