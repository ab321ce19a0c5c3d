// The Beast transport on 127.0.0.1, an ephemeral port and a trivial handler, driven by a
// synchronous Beast client (and raw bytes where the request must be malformed).

#include "server/http/server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

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

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "fc_http_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::filesystem::path path() const { return path_; }
  void write(const std::string& relative, const std::string& content) const {
    std::filesystem::path file = path_ / relative;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << content;
  }

 private:
  std::filesystem::path path_;
};

std::unique_ptr<Server> startServer(ServerOptions options = {},
                                    Server::Handler handler = echoHandler) {
  options.address = "127.0.0.1";
  options.port = 0;
  auto server = Server::start(options, std::move(handler));
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

}  // namespace
}  // namespace fabric_chaos::http
