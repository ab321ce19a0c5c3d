// The Beast transport on 127.0.0.1, an ephemeral port and a trivial handler, driven by a
// synchronous Beast client (and raw bytes where the request must be malformed).

#include "server/http/server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>

#include "net/http_client.h"
#include "tests/http/tls_test_support.h"

namespace fabric_chaos::http {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using nlohmann::json;
using ::testing::HasSubstr;

using Reply = bhttp::response<bhttp::string_body>;

// Echoes the request as JSON; a few targets trigger special answers.
api::Response echoHandler(const api::Request& request) {
  if (request.target == "/v1/throw") throw std::runtime_error("handler blew up");
  api::Response response;
  if (request.target == "/v1/empty") {
    response.status = 204;
    response.content_type.clear();
    return response;
  }
  json headers = json::object();
  for (const auto& [name, value] : request.headers) headers[name] = value;
  response.body = json{
      {"method", request.method},
      {"target", request.target},
      {"body", request.body},
      {"headers",
       headers}}.dump();
  response.headers.emplace_back("X-Echo", "yes");
  return response;
}

class Client {
 public:
  explicit Client(uint16_t port) : socket_(ioc_) {
    beast::error_code ec;
    socket_.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port), ec);
    EXPECT_FALSE(ec) << ec.message();
  }

  beast::error_code send(bhttp::request<bhttp::string_body> request) {
    request.set(bhttp::field::host, "127.0.0.1");
    request.prepare_payload();
    beast::error_code ec;
    bhttp::write(socket_, request, ec);
    return ec;
  }

  beast::error_code sendRaw(const std::string& bytes) {
    beast::error_code ec;
    net::write(socket_, net::buffer(bytes), ec);
    return ec;
  }

  // `head`: the answer to a HEAD request, which has a Content-Length but no body.
  Reply read(beast::error_code* error = nullptr, bool head = false) {
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(64 << 20);
    parser.skip(head);
    beast::error_code ec;
    bhttp::read(socket_, buffer_, parser, ec);
    if (error != nullptr) {
      *error = ec;
    } else {
      EXPECT_FALSE(ec) << ec.message();
    }
    return parser.release();
  }

  Reply get(const std::string& target, bool keep_alive = true) {
    bhttp::request<bhttp::string_body> request{bhttp::verb::get, target, 11};
    request.keep_alive(keep_alive);
    EXPECT_FALSE(send(std::move(request)));
    return read();
  }

  // Raw bytes appended to *seen until it contains `needle` (true), or the peer closed or 10 s
  // passed (false). Bypasses Beast so that a stream that never ends cannot hang the test.
  bool readRawUntil(const std::string& needle, std::string* seen) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (seen->find(needle) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd pfd{socket_.native_handle(), POLLIN, 0};
      if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) return false;
      char chunk[4096];
      const ssize_t n = ::recv(socket_.native_handle(), chunk, sizeof chunk, 0);
      if (n <= 0) return false;
      seen->append(chunk, static_cast<size_t>(n));
    }
    return true;
  }

  void close() {
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

  // True when the server closed the connection (EOF, or a reset after it closed).
  bool closedByPeer() {
    char byte;
    beast::error_code ec;
    socket_.read_some(net::buffer(&byte, 1), ec);
    return ec == net::error::eof || ec == net::error::connection_reset;
  }

 private:
  net::io_context ioc_;
  tcp::socket socket_;
  beast::flat_buffer buffer_;
};

using fabric_chaos::testing::TempDir;

std::unique_ptr<Server> startServer(ServerOptions options = {},
                                    Server::Handler handler = echoHandler,
                                    Server::StreamOpener streams = nullptr) {
  options.address = "127.0.0.1";
  options.port = 0;
  auto server = Server::start(options, std::move(handler), std::move(streams));
  EXPECT_TRUE(server.isOk()) << server.status().toString();
  if (!server.isOk()) return nullptr;
  EXPECT_NE(server.value()->port(), 0);
  return std::move(server).value();
}

void expectCommonHeaders(const Reply& reply) {
  EXPECT_EQ(reply[bhttp::field::server], "fabric-chaos");
  if (reply.result_int() != 204) {
    EXPECT_EQ(reply[bhttp::field::content_length], std::to_string(reply.body().size()));
  }
}

void expectErrorBody(const Reply& reply, const std::string& code) {
  json body = json::parse(reply.body(), nullptr, false);
  ASSERT_TRUE(body.is_object()) << reply.body();
  EXPECT_EQ(body["error"]["code"], code) << reply.body();
  EXPECT_TRUE(body["error"]["message"].is_string());
}

TEST(ServerTest, GetReachesTheHandler) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  bhttp::request<bhttp::string_body> request{bhttp::verb::post, "/v1/runs?x=1", 11};
  request.set("X-Custom", "Value");
  request.set(bhttp::field::content_type, "application/json");
  request.body() = "{\"a\":1}";
  ASSERT_FALSE(client.send(request));
  Reply reply = client.read();
  EXPECT_EQ(reply.result_int(), 200);
  expectCommonHeaders(reply);
  EXPECT_EQ(reply[bhttp::field::content_type], "application/json");
  EXPECT_EQ(reply["X-Echo"], "yes");
  json echoed = json::parse(reply.body());
  EXPECT_EQ(echoed["method"], "POST");
  EXPECT_EQ(echoed["target"], "/v1/runs?x=1");
  EXPECT_EQ(echoed["body"], "{\"a\":1}");
  EXPECT_EQ(echoed["headers"]["x-custom"], "Value");  // names are lower-cased
  EXPECT_EQ(echoed["headers"]["host"], "127.0.0.1");
}

TEST(ServerTest, KeepAliveServesTwoRequestsOnOneConnection) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  Reply first = client.get("/healthz");
  EXPECT_EQ(first.result_int(), 200);
  EXPECT_TRUE(first.keep_alive());
  Reply second = client.get("/v1/capabilities");
  EXPECT_EQ(second.result_int(), 200);
  EXPECT_EQ(json::parse(second.body())["target"], "/v1/capabilities");

  // Connection: close is honoured.
  Reply last = client.get("/healthz", /*keep_alive=*/false);
  EXPECT_EQ(last.result_int(), 200);
  EXPECT_FALSE(last.keep_alive());
  EXPECT_TRUE(client.closedByPeer());
}

TEST(ServerTest, HandlerExceptionIs500AndNoContentHasNoBody) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  Reply failed = client.get("/v1/throw");
  EXPECT_EQ(failed.result_int(), 500);
  expectCommonHeaders(failed);
  expectErrorBody(failed, "INTERNAL");
  EXPECT_THAT(failed.body(), HasSubstr("handler blew up"));

  Reply empty = client.get("/v1/empty");
  EXPECT_EQ(empty.result_int(), 204);
  EXPECT_EQ(empty[bhttp::field::server], "fabric-chaos");
  EXPECT_TRUE(empty.body().empty());
  // The connection survives both.
  EXPECT_EQ(client.get("/healthz").result_int(), 200);
}

TEST(ServerTest, BodyOverTheLimitIs413) {
  std::atomic<int> calls{0};
  auto server = startServer({}, [&](const api::Request& r) {
    ++calls;
    return echoHandler(r);
  });
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  bhttp::request<bhttp::string_body> request{bhttp::verb::post, "/v1/scenarios", 11};
  request.body() = std::string(2 << 20, 'x');
  // The server answers after the header; the body may or may not all be accepted before it
  // closes, so a write error here is not a failure.
  (void)client.send(std::move(request));
  Reply reply = client.read();
  EXPECT_EQ(reply.result_int(), 413);
  expectCommonHeaders(reply);
  expectErrorBody(reply, "PAYLOAD_TOO_LARGE");
  EXPECT_FALSE(reply.keep_alive());
  EXPECT_TRUE(client.closedByPeer());
  EXPECT_EQ(calls.load(), 0);

  // A body just under the limit still goes through.
  Client ok(server->port());
  bhttp::request<bhttp::string_body> small{bhttp::verb::post, "/v1/scenarios", 11};
  small.body() = std::string((1 << 20) - 1, 'y');
  ASSERT_FALSE(ok.send(std::move(small)));
  EXPECT_EQ(ok.read().result_int(), 200);
}

TEST(ServerTest, AnswersExpectContinueBeforeTheBody) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  ASSERT_FALSE(
      client.sendRaw("POST /v1/scenarios HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                     "Expect: 100-continue\r\n\r\n"));
  Reply interim = client.read();
  EXPECT_EQ(interim.result_int(), 100);
  ASSERT_FALSE(client.sendRaw("hello"));
  Reply reply = client.read();
  EXPECT_EQ(reply.result_int(), 200);
  EXPECT_EQ(json::parse(reply.body())["body"], "hello");

  // Too large: refused without waiting for the body.
  Client big(server->port());
  ASSERT_FALSE(
      big.sendRaw("POST /v1/scenarios HTTP/1.1\r\nHost: x\r\nContent-Length: 2097152\r\n"
                  "Expect: 100-continue\r\n\r\n"));
  EXPECT_EQ(big.read().result_int(), 413);
}

TEST(ServerTest, HeaderOverTheLimitIs431) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  bhttp::request<bhttp::string_body> request{bhttp::verb::get, "/healthz", 11};
  request.set("X-Big", std::string(20 * 1024, 'h'));
  (void)client.send(std::move(request));
  Reply reply = client.read();
  EXPECT_EQ(reply.result_int(), 431);
  expectErrorBody(reply, "HEADER_TOO_LARGE");
  EXPECT_TRUE(client.closedByPeer());
}

TEST(ServerTest, MalformedRequestLineIs400) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  for (const char* raw :
       {"GARBAGE\r\n\r\n", "GET /healthz FOO/1.1\r\n\r\n", "GET\r\nHost: x\r\n\r\n"}) {
    SCOPED_TRACE(raw);
    Client client(server->port());
    ASSERT_FALSE(client.sendRaw(raw));
    Reply reply = client.read();
    EXPECT_EQ(reply.result_int(), 400);
    expectCommonHeaders(reply);
    expectErrorBody(reply, "BAD_REQUEST");
    EXPECT_TRUE(client.closedByPeer());
  }
}

TEST(ServerTest, ServesStaticFiles) {
  TempDir root;
  root.write("index.html", "<h1>fabric-chaos</h1>");
  root.write("app.js", "console.log(1);");
  root.write("css/site.css", "body{}");
  root.write("data.bin", std::string("\0\1\2", 3));
  ServerOptions options;
  options.web_root = root.path().string();
  auto server = startServer(options);
  ASSERT_NE(server, nullptr);
  Client client(server->port());

  struct Case {
    const char* target;
    int status;
    const char* content_type;
    std::string body;
  };
  const Case cases[] = {
      {"/", 200, "text/html; charset=utf-8", "<h1>fabric-chaos</h1>"},
      {"/index.html?v=2", 200, "text/html; charset=utf-8", "<h1>fabric-chaos</h1>"},
      {"/app.js", 200, "text/javascript; charset=utf-8", "console.log(1);"},
      {"/css/site.css", 200, "text/css; charset=utf-8", "body{}"},
      {"/data.bin", 200, "application/octet-stream", std::string("\0\1\2", 3)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.target);
    Reply reply = client.get(c.target);
    EXPECT_EQ(reply.result_int(), c.status);
    expectCommonHeaders(reply);
    EXPECT_EQ(reply[bhttp::field::content_type], c.content_type);
    EXPECT_EQ(reply.body(), c.body);
  }

  // HEAD: the headers of GET, no body.
  bhttp::request<bhttp::string_body> head{bhttp::verb::head, "/app.js", 11};
  ASSERT_FALSE(client.send(head));
  Reply head_reply = client.read(nullptr, /*head=*/true);
  EXPECT_EQ(head_reply.result_int(), 200);
  EXPECT_EQ(head_reply[bhttp::field::content_length], "15");
  EXPECT_TRUE(head_reply.body().empty());

  Reply missing = client.get("/nope.html");
  EXPECT_EQ(missing.result_int(), 404);
  expectErrorBody(missing, "NOT_FOUND");

  for (const char* escape : {"/../secret", "/css/../../secret", "/css/%2e%2e/%2e%2e/secret"}) {
    SCOPED_TRACE(escape);
    Reply refused = client.get(escape);
    EXPECT_EQ(refused.result_int(), 400);
    expectErrorBody(refused, "INVALID_ARGUMENT");
  }

  // The API paths still reach the handler.
  EXPECT_EQ(json::parse(client.get("/v1/runs").body())["target"], "/v1/runs");
  EXPECT_EQ(json::parse(client.get("/healthz").body())["target"], "/healthz");
  EXPECT_EQ(json::parse(client.get("/metrics").body())["target"], "/metrics");

  bhttp::request<bhttp::string_body> post{bhttp::verb::post, "/index.html", 11};
  ASSERT_FALSE(client.send(post));
  Reply not_allowed = client.read();
  EXPECT_EQ(not_allowed.result_int(), 405);
  EXPECT_EQ(not_allowed[bhttp::field::allow], "GET, HEAD");
}

TEST(ServerTest, WithoutWebRootEverythingGoesToTheHandler) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  EXPECT_EQ(json::parse(client.get("/index.html").body())["target"], "/index.html");
}

TEST(ServerTest, StopJoinsPromptlyWithIdleConnections) {
  ServerOptions options;
  options.read_timeout_ms = 60000;
  options.threads = 3;
  auto server = startServer(options);
  ASSERT_NE(server, nullptr);
  Client idle(server->port());
  EXPECT_EQ(idle.get("/healthz").result_int(), 200);  // now waiting for a next request
  Client silent(server->port());                      // connected, never sent anything

  const auto begin = std::chrono::steady_clock::now();
  server->stop();
  const auto elapsed = std::chrono::steady_clock::now() - begin;
  EXPECT_LT(elapsed, std::chrono::seconds(2));
  EXPECT_TRUE(idle.closedByPeer());
  EXPECT_TRUE(silent.closedByPeer());
  server->stop();  // idempotent

  // Nobody listens any more.
  net::io_context ioc;
  tcp::socket socket(ioc);
  beast::error_code ec;
  socket.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), server->port()), ec);
  EXPECT_TRUE(ec);
}

TEST(ServerTest, ReadTimeoutClosesSilentConnections) {
  ServerOptions options;
  options.read_timeout_ms = 200;
  auto server = startServer(options);
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  const auto begin = std::chrono::steady_clock::now();
  EXPECT_TRUE(client.closedByPeer());
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(5));
}

TEST(ServerTest, BindFailureNamesTheAddress) {
  auto first = startServer();
  ASSERT_NE(first, nullptr);
  ServerOptions options;
  options.address = "127.0.0.1";
  options.port = first->port();
  auto second = Server::start(options, echoHandler);
  ASSERT_FALSE(second.isOk());
  const std::string message = second.status().message();
  EXPECT_THAT(message, HasSubstr("127.0.0.1:" + std::to_string(first->port())));
  EXPECT_THAT(message, HasSubstr("Address already in use"));

  options.address = "not-an-address";
  auto bad = Server::start(options, echoHandler);
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("not-an-address"));
}

// --- limits and timeouts ---------------------------------------------------------------------

// Polls `condition` every 10 ms for up to 5 s (a generous bound, not a timing assertion).
bool eventually(const std::function<bool()>& condition) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

TEST(ServerTest, ConnectionsOverTheLimitGet503AndAreClosed) {
  ServerOptions options;
  options.max_connections = 2;
  auto server = startServer(options);
  ASSERT_NE(server, nullptr);
  auto first = std::make_unique<Client>(server->port());
  Client second(server->port());
  // Answered requests prove both connections were accepted before the third one.
  EXPECT_EQ(first->get("/healthz").result_int(), 200);
  EXPECT_EQ(second.get("/healthz").result_int(), 200);

  Client third(server->port());
  (void)third.send(bhttp::request<bhttp::string_body>{bhttp::verb::get, "/healthz", 11});
  Reply refused = third.read();
  EXPECT_EQ(refused.result_int(), 503);
  expectCommonHeaders(refused);
  expectErrorBody(refused, "UNAVAILABLE");
  EXPECT_EQ(json::parse(refused.body())["error"]["message"], "too many connections (limit 2)");
  EXPECT_FALSE(refused.keep_alive());
  EXPECT_TRUE(third.closedByPeer());

  // The admitted connections are unaffected; closing one frees its slot.
  EXPECT_EQ(second.get("/healthz").result_int(), 200);
  first->close();
  first.reset();
  EXPECT_TRUE(eventually([&] {
    Client again(server->port());
    beast::error_code ec;
    if (again.send(bhttp::request<bhttp::string_body>{bhttp::verb::get, "/healthz", 11})) {
      return false;
    }
    return again.read(&ec).result_int() == 200 && !ec;
  }));
}

TEST(ServerTest, IdleKeepAliveConnectionsAreClosed) {
  ServerOptions options;
  options.idle_timeout_ms = 200;
  options.read_timeout_ms = 60000;
  auto server = startServer(options);
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  EXPECT_EQ(client.get("/healthz").result_int(), 200);
  const auto begin = std::chrono::steady_clock::now();
  EXPECT_TRUE(client.closedByPeer());  // would block for 60 s under the read timeout
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(10));
}

TEST(ServerTest, ReadTimeoutClosesAStalledRequestOnAKeepAliveConnection) {
  ServerOptions options;
  options.idle_timeout_ms = 60000;
  options.read_timeout_ms = 200;
  auto server = startServer(options);
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  EXPECT_EQ(client.get("/healthz").result_int(), 200);
  // A second request starts and stalls half-way through its header.
  ASSERT_FALSE(client.sendRaw("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: "));
  const auto begin = std::chrono::steady_clock::now();
  EXPECT_TRUE(client.closedByPeer());
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(10));
}

// Handlers that wait in it until release(): stuck, as on a store that does not answer. Counts
// how many are waiting.
class HandlerGate {
 public:
  void wait() {
    ++waiting_;
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return released_; });
  }
  void release() {
    {
      std::lock_guard lock(mu_);
      released_ = true;
    }
    cv_.notify_all();
  }
  int waiting() const { return waiting_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
  std::atomic<int> waiting_{0};
};

// Handlers run on their own pool: with one I/O thread and two handlers stuck (as on a store
// that does not answer), another API request and /healthz (answered on the I/O thread) still
// get their answers, and the stuck ones theirs once they are released.
TEST(ServerTest, StuckHandlersHoldNeitherTheSocketsNorTheOtherHandlers) {
  HandlerGate gate;
  ServerOptions options;
  options.threads = 1;
  options.handler_threads = 3;
  auto server = startServer(options, [&](const api::Request& request) {
    if (request.target == "/v1/stuck") {
      gate.wait();
    }
    return echoHandler(request);
  });
  ASSERT_NE(server, nullptr);
  Client first(server->port());
  Client second(server->port());
  for (Client* client : {&first, &second}) {
    ASSERT_FALSE(
        client->send(bhttp::request<bhttp::string_body>{bhttp::verb::get, "/v1/stuck", 11}));
  }
  ASSERT_TRUE(eventually([&] { return gate.waiting() == 2; }));

  Client other(server->port());
  EXPECT_EQ(other.get("/v1/runs").result_int(), 200);
  EXPECT_EQ(other.get("/healthz").result_int(), 200);
  EXPECT_EQ(gate.waiting(), 2);  // both still stuck while those were answered
  gate.release();
  EXPECT_EQ(first.read().result_int(), 200);
  EXPECT_EQ(second.read().result_int(), 200);
}

// Bulk reads run on their own threads under SCHED_IDLE, other handlers under the process's
// policy: each handler answers with the policy of the thread it ran on (sched_getscheduler on
// its own thread id). A stuck bulk read leaves the other handlers free.
TEST(ServerTest, BulkReadsRunOnTheirOwnLowPriorityThreads) {
  HandlerGate gate;
  ServerOptions options;
  options.bulk_threads = 1;
  options.is_bulk = [](const api::Request& request) {
    return request.target.rfind("/v1/bulk", 0) == 0;
  };
  auto server = startServer(options, [&](const api::Request& request) {
    if (request.target == "/v1/bulk/stuck") {
      gate.wait();
    }
    const int policy = ::sched_getscheduler(static_cast<pid_t>(::syscall(SYS_gettid)));
    api::Response response;
    response.status = 200;
    response.body = std::to_string(policy);
    return response;
  });
  ASSERT_NE(server, nullptr);
  const int process_policy = ::sched_getscheduler(0);
  ASSERT_NE(process_policy, SCHED_IDLE);
  Client client(server->port());
  EXPECT_EQ(client.get("/v1/bulk/read").body(), std::to_string(SCHED_IDLE));
  EXPECT_EQ(client.get("/v1/runs").body(), std::to_string(process_policy));

  Client stuck_client(server->port());
  ASSERT_FALSE(stuck_client.send(
      bhttp::request<bhttp::string_body>{bhttp::verb::get, "/v1/bulk/stuck", 11}));
  ASSERT_TRUE(eventually([&] { return gate.waiting() == 1; }));
  EXPECT_EQ(client.get("/v1/runs").result_int(), 200);  // the only bulk thread is stuck
  gate.release();
  EXPECT_EQ(stuck_client.read().result_int(), 200);
}

// A handler still running when the server stops: stop() waits for it, and its answer goes
// nowhere (the connection is already closed) instead of to freed memory.
TEST(ServerTest, StopWaitsForAHandlerInProgress) {
  std::atomic<bool> entered{false};
  std::atomic<bool> finished{false};
  auto server = startServer({}, [&](const api::Request& request) {
    entered = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    finished = true;
    return echoHandler(request);
  });
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  ASSERT_FALSE(client.send(bhttp::request<bhttp::string_body>{bhttp::verb::get, "/v1/runs", 11}));
  ASSERT_TRUE(eventually([&] { return entered.load(); }));
  server->stop();
  EXPECT_TRUE(finished);
  EXPECT_TRUE(client.closedByPeer());
}

TEST(ServerTest, RejectsAZeroConnectionLimit) {
  ServerOptions options;
  options.port = 0;
  options.max_connections = 0;
  auto server = Server::start(options, echoHandler);
  ASSERT_FALSE(server.isOk());
  EXPECT_THAT(server.status().message(), HasSubstr("max_connections"));
}

// --- event streams -----------------------------------------------------------------------------

struct StreamProbe {
  std::atomic<int> next_calls{0};
  std::atomic<bool> destroyed{false};
};

// Emits "event: tick\ndata: N\n\n" on each call (or nothing when `silent`), done after `count`
// calls (never when count < 0); throws on call `throw_on` when set.
class FakeEventStream : public core::EventStream {
 public:
  FakeEventStream(std::shared_ptr<StreamProbe> probe, int count, bool silent = false,
                  int throw_on = 0)
      : probe_(std::move(probe)), count_(count), silent_(silent), throw_on_(throw_on) {}
  ~FakeEventStream() override { probe_->destroyed = true; }
  Chunk next() override {
    const int n = ++probe_->next_calls;
    if (throw_on_ != 0 && n == throw_on_) throw std::runtime_error("stream blew up");
    Chunk chunk;
    if (!silent_) chunk.text = "event: tick\ndata: " + std::to_string(n) + "\n\n";
    chunk.done = count_ >= 0 && n >= count_;
    return chunk;
  }
  int pollIntervalMs() const override { return 20; }

 private:
  std::shared_ptr<StreamProbe> probe_;
  const int count_;
  const bool silent_;
  const int throw_on_;
};

// Streams on /v1/stream (a FakeEventStream made by `make`), refuses /v1/refused with 401, and
// leaves everything else to the handler.
Server::StreamOpener fakeOpener(std::function<std::unique_ptr<core::EventStream>()> make) {
  return [make = std::move(make)](const api::Request& request,
                                  api::Response* refusal) -> std::unique_ptr<core::EventStream> {
    if (request.target == "/v1/stream") return make();
    if (request.target == "/v1/refused") {
      refusal->status = 401;
      refusal->body = R"({"error":{"code":"UNAUTHENTICATED","message":"no token"}})";
    }
    return nullptr;
  };
}

TEST(ServerStreamTest, WritesEveryChunkThenEnds) {
  auto probe = std::make_shared<StreamProbe>();
  auto server = startServer(
      {}, echoHandler, fakeOpener([&] { return std::make_unique<FakeEventStream>(probe, 3); }));
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  Reply reply = client.get("/v1/stream");
  EXPECT_EQ(reply.result_int(), 200);
  EXPECT_EQ(reply[bhttp::field::content_type], "text/event-stream");
  EXPECT_EQ(reply[bhttp::field::cache_control], "no-cache");
  EXPECT_TRUE(reply.chunked());
  EXPECT_EQ(reply.body(),
            "event: tick\ndata: 1\n\nevent: tick\ndata: 2\n\nevent: tick\ndata: 3\n\n");
  EXPECT_EQ(probe->next_calls.load(), 3);
  EXPECT_TRUE(eventually([&] { return probe->destroyed.load(); }));
  EXPECT_TRUE(client.closedByPeer());
}

TEST(ServerStreamTest, RefusalIsAnsweredAndStatusZeroFallsThroughToTheHandler) {
  auto probe = std::make_shared<StreamProbe>();
  auto server = startServer(
      {}, echoHandler, fakeOpener([&] { return std::make_unique<FakeEventStream>(probe, 1); }));
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  Reply refused = client.get("/v1/refused");
  EXPECT_EQ(refused.result_int(), 401);
  expectErrorBody(refused, "UNAUTHENTICATED");
  // The connection stays usable, and other targets reach the handler.
  Reply normal = client.get("/v1/runs");
  EXPECT_EQ(normal.result_int(), 200);
  EXPECT_EQ(json::parse(normal.body())["target"], "/v1/runs");
  EXPECT_EQ(probe->next_calls.load(), 0);
}

TEST(ServerStreamTest, ClientDisconnectMidStreamFreesTheStream) {
  auto probe = std::make_shared<StreamProbe>();
  auto server = startServer(
      {}, echoHandler, fakeOpener([&] { return std::make_unique<FakeEventStream>(probe, -1); }));
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  ASSERT_FALSE(client.sendRaw("GET /v1/stream HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string seen;
  ASSERT_TRUE(client.readRawUntil("data: 2\n\n", &seen)) << seen;
  EXPECT_THAT(seen, HasSubstr("HTTP/1.1 200 OK"));
  EXPECT_THAT(seen, HasSubstr("Transfer-Encoding: chunked"));
  EXPECT_FALSE(probe->destroyed.load());
  client.close();
  EXPECT_TRUE(eventually([&] { return probe->destroyed.load(); }));
  // No more polling once it is gone.
  const int calls = probe->next_calls.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(probe->next_calls.load(), calls);
}

TEST(ServerStreamTest, SilentStreamSendsKeepAlivesAndOutlivesTheIdleTimeout) {
  ServerOptions options;
  options.idle_timeout_ms = 300;  // keep-alive comments every 150 ms
  auto probe = std::make_shared<StreamProbe>();
  auto server = startServer(options, echoHandler, fakeOpener([&] {
                              return std::make_unique<FakeEventStream>(probe, -1, /*silent=*/true);
                            }));
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  ASSERT_FALSE(client.sendRaw("GET /v1/stream HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string seen;
  ASSERT_TRUE(client.readRawUntil(": keep-alive\n\n", &seen)) << seen;
  // Three idle timeouts later the stream is still open and still sending comments.
  std::this_thread::sleep_for(std::chrono::milliseconds(900));
  seen.clear();
  EXPECT_TRUE(client.readRawUntil(": keep-alive\n\n", &seen)) << seen;
  EXPECT_FALSE(probe->destroyed.load());
  EXPECT_GT(probe->next_calls.load(), 5);
}

TEST(ServerStreamTest, ExceptionInNextEndsTheStream) {
  auto probe = std::make_shared<StreamProbe>();
  auto server = startServer({}, echoHandler, fakeOpener([&] {
                              return std::make_unique<FakeEventStream>(probe, -1, false, 2);
                            }));
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  Reply reply = client.get("/v1/stream");
  EXPECT_EQ(reply.result_int(), 200);
  EXPECT_EQ(reply.body(), "event: tick\ndata: 1\n\n");
  EXPECT_TRUE(eventually([&] { return probe->destroyed.load(); }));
}

TEST(ServerStreamTest, Http10StreamIsCloseDelimited) {
  auto probe = std::make_shared<StreamProbe>();
  auto server = startServer(
      {}, echoHandler, fakeOpener([&] { return std::make_unique<FakeEventStream>(probe, 2); }));
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  ASSERT_FALSE(client.sendRaw("GET /v1/stream HTTP/1.0\r\n\r\n"));
  std::string seen;
  EXPECT_FALSE(client.readRawUntil("never", &seen));  // reads until the server closes
  EXPECT_THAT(seen, HasSubstr("HTTP/1.0 200 OK"));
  EXPECT_THAT(seen, ::testing::Not(HasSubstr("chunked")));
  EXPECT_THAT(seen,
              ::testing::EndsWith("\r\n\r\nevent: tick\ndata: 1\n\nevent: tick\ndata: 2\n\n"));
}

TEST(ServerStreamTest, StopEndsOpenStreamsPromptly) {
  auto probe = std::make_shared<StreamProbe>();
  auto server = startServer(
      {}, echoHandler, fakeOpener([&] { return std::make_unique<FakeEventStream>(probe, -1); }));
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  ASSERT_FALSE(client.sendRaw("GET /v1/stream HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string seen;
  ASSERT_TRUE(client.readRawUntil("data: 1\n\n", &seen)) << seen;
  const auto begin = std::chrono::steady_clock::now();
  server->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(2));
  EXPECT_TRUE(probe->destroyed.load());  // freed before stop() returned
  EXPECT_FALSE(client.readRawUntil("never", &seen));
}

// --- TLS ---------------------------------------------------------------------------------------

struct TlsServer {
  TempDir dir;
  testing::SelfSignedCert cert = testing::SelfSignedCert::make(dir, "server", "IP:127.0.0.1");
};

TEST(ServerTlsTest, ServesHttpsAndRefusesPlainHttpCleanly) {
  TlsServer tls;
  FC_REQUIRE_CERT(tls.cert);
  auto probe = std::make_shared<StreamProbe>();
  ServerOptions options;
  options.tls_cert_file = tls.cert.cert_file;
  options.tls_key_file = tls.cert.key_file;
  auto server =
      startServer(options, echoHandler,
                  fakeOpener([&] { return std::make_unique<FakeEventStream>(probe, 2); }));
  ASSERT_NE(server, nullptr);
  const std::string base = "https://127.0.0.1:" + std::to_string(server->port());
  fabric_chaos::net::HttpClient client(base, 5000, {tls.cert.cert_file, false});
  ASSERT_TRUE(client.status().isOk()) << client.status().toString();

  core::HttpRequest request;
  request.method = "POST";
  request.target = "/v1/runs";
  request.body = "{\"scenario\":\"link-flap\"}";
  auto reply = client.send(request);
  ASSERT_TRUE(reply.isOk()) << reply.status().toString();
  EXPECT_EQ(reply->status, 200);
  json echoed = json::parse(reply->body);
  EXPECT_EQ(echoed["method"], "POST");
  EXPECT_EQ(echoed["body"], "{\"scenario\":\"link-flap\"}");

  // Event streams share the session code: the same over TLS.
  auto stream = client.send({"GET", "/v1/stream", {}, ""});
  ASSERT_TRUE(stream.isOk()) << stream.status().toString();
  EXPECT_EQ(stream->content_type, "text/event-stream");
  EXPECT_EQ(stream->body, "event: tick\ndata: 1\n\nevent: tick\ndata: 2\n\n");

  // Plain HTTP to the HTTPS port: a plain 400 that says why, then the connection closes.
  Client plain(server->port());
  ASSERT_FALSE(plain.send(bhttp::request<bhttp::string_body>{bhttp::verb::get, "/healthz", 11}));
  beast::error_code ec;
  Reply refused = plain.read(&ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(refused.result_int(), 400);
  expectErrorBody(refused, "BAD_REQUEST");
  EXPECT_THAT(refused.body(), HasSubstr("HTTPS"));
  EXPECT_TRUE(plain.closedByPeer());

  // A client that sends garbage instead of a handshake is just closed.
  Client garbage(server->port());
  ASSERT_FALSE(garbage.sendRaw(std::string(64, '\x16')));
  EXPECT_TRUE(garbage.closedByPeer());
  // And the server still serves.
  EXPECT_TRUE(client.send({"GET", "/healthz", {}, ""}).isOk());
}

TEST(ServerTlsTest, UnusableCertificateOrKeyIsAClearError) {
  TlsServer tls;
  FC_REQUIRE_CERT(tls.cert);
  TempDir other_dir;
  auto other = testing::SelfSignedCert::make(other_dir, "other", "IP:127.0.0.1");
  FC_REQUIRE_CERT(other);
  tls.dir.write("garbage.pem", "not a certificate\n");

  struct Case {
    std::string cert;
    std::string key;
    std::string expected;
  };
  const std::string missing = tls.dir.file("missing.pem");
  const std::string garbage = tls.dir.file("garbage.pem");
  const Case cases[] = {
      {missing, tls.cert.key_file,
       "cannot load TLS certificate " + missing + ": No such file or directory"},
      {tls.cert.cert_file, missing,
       "cannot load TLS private key " + missing + ": No such file or directory"},
      {garbage, tls.cert.key_file, "cannot load TLS certificate " + garbage + ": "},
      {tls.cert.cert_file, garbage, "cannot load TLS private key " + garbage + ": "},
      {tls.cert.cert_file, other.key_file,
       "TLS private key " + other.key_file + " does not match certificate " + tls.cert.cert_file},
      {tls.cert.cert_file, "", "TLS needs both a certificate and a private key"},
      {"", tls.cert.key_file, "TLS needs both a certificate and a private key"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.cert + " / " + c.key);
    ServerOptions options;
    options.port = 0;
    options.tls_cert_file = c.cert;
    options.tls_key_file = c.key;
    auto server = Server::start(options, echoHandler);
    ASSERT_FALSE(server.isOk());
    EXPECT_EQ(server.status().code(), core::StatusCode::kInvalidArgument);
    EXPECT_THAT(server.status().message(), HasSubstr(c.expected));
  }
}

}  // namespace
}  // namespace fabric_chaos::http
