// The Beast transport: one acceptor, one Session per connection, every Session on its own strand.
// This is the only translation unit that includes Beast (it compiles slowly). Network calls use
// the error_code forms only; an exception from the handler becomes a 500.
//
// stop() must not be called from the handler (it joins the threads that run it).

#include "server/http/server.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "server/api/util.h"
#include "server/http/static_files.h"

namespace fabric_chaos::http {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using core::Status;
using core::StatusCode;

constexpr uint32_t kHeaderLimit = 16 * 1024;
// After an error response to a request we did not read to the end (413, 431, 400), keep reading
// and discarding for a while so that closing does not reset the connection before the client has
// read the response.
constexpr auto kLingerTime = std::chrono::seconds(2);
constexpr size_t kLingerBytes = 16 << 20;
constexpr auto kAcceptRetry = std::chrono::milliseconds(100);
constexpr char kServerName[] = "fabric-chaos";

Status statusFromError(const beast::error_code& ec, const std::string& what) {
  if (ec.category() == boost::system::system_category()) return core::errnoStatus(ec.value(), what);
  return Status(StatusCode::kInternal, what + ": " + ec.message());
}

bool isHttpParseError(const beast::error_code& ec) {
  return ec.category() == beast::error_code(bhttp::error::bad_target).category();
}

std::string lower(beast::string_view s) {
  std::string out(s.data(), s.size());
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

class ServerImpl;

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, ServerImpl* server) : stream_(std::move(socket)), server_(server) {}

  void start() {
    net::dispatch(stream_.get_executor(),
                  beast::bind_front_handler(&Session::doRead, shared_from_this()));
  }

  // From any thread: closes the connection, which cancels whatever is pending on it.
  void cancel() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      self->closing_ = true;
      self->closeNow();
    });
  }

 private:
  void doRead();
  void onHeader(beast::error_code ec, size_t bytes);
  void readBody();
  void onRead(beast::error_code ec, size_t bytes);
  void handleRequest(bhttp::request<bhttp::string_body>&& request);
  void send(api::Response response, unsigned version, bool keep_alive, bool head_only, bool linger);
  void onWrite(bool keep_alive, bool linger, beast::error_code ec, size_t bytes);
  void lingeringClose();
  void drain();
  void closeNow() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
  }

  beast::tcp_stream stream_;
  ServerImpl* server_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::optional<bhttp::response<bhttp::empty_body>> continue_;
  std::shared_ptr<bhttp::response<bhttp::string_body>> response_;
  std::vector<char> drain_buffer_;
  size_t drained_ = 0;
  bool closing_ = false;
};

class ServerImpl : public Server {
 public:
  ServerImpl(const ServerOptions& options, Handler handler)
      : options_(options),
        handler_(std::move(handler)),
        ioc_(std::max(1, options.threads)),
        acceptor_(net::make_strand(ioc_)),
        retry_timer_(acceptor_.get_executor()) {}

  ~ServerImpl() override { stop(); }

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
    std::vector<std::shared_ptr<Session>> sessions;
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
    work_.reset();
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
    threads_.clear();
  }

  const ServerOptions& options() const { return options_; }
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
    auto session = std::make_shared<Session>(std::move(socket), this);
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
  net::io_context ioc_;
  tcp::acceptor acceptor_;
  net::steady_timer retry_timer_;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;
  uint16_t port_ = 0;
  std::mutex mu_;
  bool stopped_ = false;
  std::map<Session*, std::weak_ptr<Session>> sessions_;
};

void Session::doRead() {
  if (closing_) return;
  parser_.emplace();
  parser_->body_limit(server_->options().body_limit);
  parser_->header_limit(kHeaderLimit);
  stream_.expires_after(std::chrono::milliseconds(server_->options().read_timeout_ms));
  // The header first, so that a client waiting for "100 Continue" (curl does, for bodies over
  // 1 KiB) is answered before it sends the body; an oversized Content-Length fails right here.
  bhttp::async_read_header(stream_, buffer_, *parser_,
                           beast::bind_front_handler(&Session::onHeader, shared_from_this()));
}

void Session::onHeader(beast::error_code ec, size_t bytes) {
  if (ec || parser_->is_done()) return onRead(ec, bytes);
  if (beast::iequals(parser_->get()[bhttp::field::expect], "100-continue")) {
    continue_.emplace(bhttp::status::continue_, parser_->get().version());
    continue_->set(bhttp::field::server, kServerName);
    bhttp::async_write(stream_, *continue_,
                       [self = shared_from_this()](beast::error_code write_ec, size_t) {
                         self->continue_.reset();
                         if (write_ec) return self->onRead(write_ec, 0);
                         self->readBody();
                       });
    return;
  }
  readBody();
}

void Session::readBody() {
  bhttp::async_read(stream_, buffer_, *parser_,
                    beast::bind_front_handler(&Session::onRead, shared_from_this()));
}

void Session::onRead(beast::error_code ec, size_t) {
  if (closing_ || ec == net::error::operation_aborted) return;
  if (ec == bhttp::error::end_of_stream) {
    // The client closed between requests.
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
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

void Session::handleRequest(bhttp::request<bhttp::string_body>&& request) {
  const bool head_only = request.method() == bhttp::verb::head;
  const bool keep_alive = request.keep_alive() && !server_->stopping();
  const std::string target(request.target().data(), request.target().size());
  api::Response response;

  if (!server_->options().web_root.empty() && !isApiPath(target)) {
    if (request.method() != bhttp::verb::get && !head_only) {
      response = api::errorBody(405, "METHOD_NOT_ALLOWED",
                                "method " + std::string(request.method_string()) +
                                    " is not allowed on static files; allowed: GET, HEAD");
      response.headers.emplace_back("Allow", "GET, HEAD");
    } else {
      auto file = readStaticFile(server_->options().web_root, target);
      if (file) {
        response.status = 200;
        response.content_type = file->content_type;
        response.body = std::move(file->body);
      } else {
        response = api::errorResponse(file.status());
      }
    }
  } else {
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
    response = server_->call(api_request);
  }
  send(std::move(response), request.version(), keep_alive, head_only, false);
}

void Session::send(api::Response response, unsigned version, bool keep_alive, bool head_only,
                   bool linger) {
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
  stream_.expires_after(std::chrono::milliseconds(server_->options().read_timeout_ms));
  bhttp::async_write(
      stream_, *response_,
      beast::bind_front_handler(&Session::onWrite, shared_from_this(), keep_alive, linger));
}

void Session::onWrite(bool keep_alive, bool linger, beast::error_code ec, size_t) {
  response_.reset();
  if (closing_ || ec) {
    closeNow();
    return;
  }
  if (linger) return lingeringClose();
  if (!keep_alive) {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    return;
  }
  doRead();
}

void Session::lingeringClose() {
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  stream_.expires_after(kLingerTime);
  drain_buffer_.resize(16 * 1024);
  drain();
}

void Session::drain() {
  stream_.async_read_some(net::buffer(drain_buffer_),
                          [self = shared_from_this()](beast::error_code ec, size_t bytes) {
                            self->drained_ += bytes;
                            if (ec || self->closing_ || self->drained_ > kLingerBytes) {
                              self->closeNow();
                              return;
                            }
                            self->drain();
                          });
}

}  // namespace

core::Result<std::unique_ptr<Server>> Server::start(const ServerOptions& options, Handler handler,
                                                    StreamOpener /*streams*/) {
  if (!handler) return Status(StatusCode::kInvalidArgument, "http server needs a handler");
  auto server = std::make_unique<ServerImpl>(options, std::move(handler));
  if (Status st = server->listen(); !st.isOk()) return st;
  server->run();
  return std::unique_ptr<Server>(std::move(server));
}

}  // namespace fabric_chaos::http
