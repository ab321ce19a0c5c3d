// Beast's asynchronous operations driven by a private io_context per request: that is how a
// "synchronous" call gets one deadline for resolve, connect, write and read (the blocking Beast
// calls have no timeout at all). HTTP and HTTPS share one exchange() over either stream type.

#include "net/http_client.h"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <type_traits>

namespace fabric_chaos::net {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;
using core::Status;
using core::StatusCode;

constexpr size_t kResponseBodyLimit = 64 << 20;
constexpr char kUserAgent[] = "fabric-chaos";

std::string lower(beast::string_view s) {
  std::string out(s.data(), s.size());
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Status invalid(const std::string& url, const std::string& problem) {
  return Status(StatusCode::kInvalidArgument, "bad URL \"" + url + "\": " + problem);
}

}  // namespace

core::Result<Url> parseHttpUrl(const std::string& url) {
  Url out;
  std::string rest;
  if (url.rfind("https://", 0) == 0) {
    out.tls = true;
    out.port = 443;
    rest = url.substr(8);
  } else if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else {
    return invalid(url, "must start with http:// or https://");
  }
  const size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  if (slash != std::string::npos) {
    out.base_path = rest.substr(slash);
    while (!out.base_path.empty() && out.base_path.back() == '/') out.base_path.pop_back();
    if (out.base_path.find_first_of("?#") != std::string::npos) {
      return invalid(url, "must not carry a query or fragment");
    }
  }
  if (authority.find('@') != std::string::npos) return invalid(url, "user info is not supported");
  std::string port_text;
  if (!authority.empty() && authority[0] == '[') {
    const size_t close = authority.find(']');
    if (close == std::string::npos) return invalid(url, "unterminated [IPv6 address]");
    out.host = authority.substr(1, close - 1);
    std::string after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return invalid(url, "unexpected text after ]");
      port_text = after.substr(1);
    }
  } else {
    const size_t colon = authority.rfind(':');
    out.host = authority.substr(0, colon);
    if (colon != std::string::npos) port_text = authority.substr(colon + 1);
  }
  if (out.host.empty()) return invalid(url, "no host");
  if (!port_text.empty()) {
    if (port_text.size() > 5 || !std::all_of(port_text.begin(), port_text.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c)) != 0;
        })) {
      return invalid(url, "bad port \"" + port_text + "\"");
    }
    const int port = std::stoi(port_text);
    if (port < 1 || port > 65535) return invalid(url, "port out of range");
    out.port = static_cast<uint16_t>(port);
  }
  return out;
}

namespace {

// The client certificate a server that verifies its clients asks for; a pair that cannot be used
// is refused here, naming the file, rather than at the first handshake.
Status useClientCertificate(ssl::context& context, const TlsOptions& tls) {
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "a client certificate needs both a certificate and a key file; got only " +
                      (tls.cert_file.empty() ? "the key " + tls.key_file
                                             : "the certificate " + tls.cert_file));
  }
  for (const std::string* file : {&tls.cert_file, &tls.key_file}) {
    if (!std::ifstream(*file)) {
      return Status(StatusCode::kInvalidArgument,
                    "cannot read client TLS file " + *file + ": " + std::strerror(errno));
    }
  }
  beast::error_code ec;
  context.use_certificate_chain_file(tls.cert_file, ec);
  if (ec) {
    return Status(StatusCode::kInvalidArgument,
                  "cannot load client certificate " + tls.cert_file + ": " + ec.message());
  }
  context.use_private_key_file(tls.key_file, ssl::context::pem, ec);
  if (ec || SSL_CTX_check_private_key(context.native_handle()) != 1) {
    return Status(
        StatusCode::kInvalidArgument,
        "client key " + tls.key_file + " cannot be used with certificate " + tls.cert_file);
  }
  return Status::ok();
}

}  // namespace

HttpClient::HttpClient(std::string base_url, int default_timeout_ms, TlsOptions tls)
    : base_url_(std::move(base_url)), default_timeout_ms_(std::max(1, default_timeout_ms)) {
  while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
  auto url = parseHttpUrl(base_url_);
  if (!url.isOk()) {
    status_ = url.status();
    return;
  }
  url_ = url.value();
  if (!url_.tls) return;
  auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  beast::error_code ec;
  if (tls.insecure) {
    context->set_verify_mode(ssl::verify_none);
  } else {
    context->set_verify_mode(ssl::verify_peer);
    if (!tls.ca_file.empty()) {
      if (!std::ifstream(tls.ca_file)) {
        status_ = Status(StatusCode::kInvalidArgument,
                         "cannot read CA file " + tls.ca_file + ": " + std::strerror(errno));
        return;
      }
      context->load_verify_file(tls.ca_file, ec);
      if (ec) {
        status_ = Status(StatusCode::kInvalidArgument,
                         "cannot load CA file " + tls.ca_file + ": " + ec.message());
        return;
      }
    } else {
      context->set_default_verify_paths(ec);
      if (ec) {
        status_ = Status(StatusCode::kInternal,
                         "cannot load the system's CA certificates: " + ec.message());
        return;
      }
    }
  }
  if (!tls.cert_file.empty() || !tls.key_file.empty()) {
    if (Status st = useClientCertificate(*context, tls); !st.isOk()) {
      status_ = st;
      return;
    }
  }
  tls_context_ = std::move(context);
}

namespace {

using Failure = std::function<Status(const beast::error_code&, const std::string&)>;

// Connect (and handshake), write, read: the part that differs only by stream type.
template <class Stream>
core::Result<bhttp::response<bhttp::string_body>> exchange(
    Stream& stream, asio::io_context& ioc, const tcp::resolver::results_type& endpoints,
    const Url& url, std::chrono::steady_clock::time_point deadline,
    bhttp::request<bhttp::string_body>& message, const Failure& failure) {
  beast::error_code ec;
  auto& lowest = beast::get_lowest_layer(stream);
  lowest.expires_at(deadline);
  lowest.async_connect(endpoints,
                       [&](const beast::error_code& e, const tcp::endpoint&) { ec = e; });
  ioc.restart();
  ioc.run();
  if (ec) return failure(ec, "connecting");

  if constexpr (!std::is_same_v<Stream, beast::tcp_stream>) {
    beast::error_code ip_ec;
    asio::ip::make_address(url.host, ip_ec);
    // SNI for names; the certificate must match the host (a name or an IP address).
    if (ip_ec && !SSL_set_tlsext_host_name(stream.native_handle(), url.host.c_str())) {
      return Status(StatusCode::kInternal, "cannot set the TLS server name " + url.host);
    }
    stream.set_verify_callback(ssl::host_name_verification(url.host));
    stream.async_handshake(ssl::stream_base::client, [&](const beast::error_code& e) { ec = e; });
    ioc.restart();
    ioc.run();
    if (ec) return failure(ec, "TLS handshake");
  }

  bhttp::async_write(stream, message, [&](const beast::error_code& e, size_t) { ec = e; });
  ioc.restart();
  ioc.run();
  if (ec) return failure(ec, "sending the request");

  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(kResponseBodyLimit);
  bhttp::async_read(stream, buffer, parser, [&](const beast::error_code& e, size_t) { ec = e; });
  ioc.restart();
  ioc.run();
  if (ec) return failure(ec, "reading the response");

  // One request per connection: close without a TLS close_notify round trip.
  beast::error_code ignored;
  lowest.socket().shutdown(tcp::socket::shutdown_both, ignored);
  lowest.close();
  return parser.release();
}

}  // namespace

core::Result<core::HttpResponse> HttpClient::send(const core::HttpRequest& request,
                                                  int timeout_ms) const {
  if (!status_.isOk()) return status_;
  const int timeout = timeout_ms > 0 ? timeout_ms : default_timeout_ms_;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout);
  const std::string what = request.method + " " + base_url_ + request.target;
  auto failure = [&](const beast::error_code& ec, const std::string& step) {
    if (ec == beast::error::timeout || ec == asio::error::operation_aborted) {
      return Status(StatusCode::kUnavailable,
                    what + ": timed out " + step + " after " + std::to_string(timeout) + " ms");
    }
    const int origin = ec.category() == boost::system::system_category() ? ec.value() : 0;
    return Status(StatusCode::kUnavailable, what + ": " + step + ": " + ec.message(), origin);
  };

  asio::io_context ioc;
  beast::error_code ec;

  // A numeric address needs no resolver. asio's async_resolve starts a thread per io_context,
  // and so per request here: a controller renewing 1,250 agents' leases paid a thread start and
  // join on every call (bench/fanout_bench).
  tcp::resolver::results_type endpoints;
  boost::system::error_code not_numeric;
  const asio::ip::address numeric = asio::ip::make_address(url_.host, not_numeric);
  if (!not_numeric) {
    endpoints = tcp::resolver::results_type::create(tcp::endpoint(numeric, url_.port), url_.host,
                                                    std::to_string(url_.port));
  } else {
    // A name: resolved bounded by the deadline like everything else.
    tcp::resolver resolver(ioc);
    bool resolved = false;
    resolver.async_resolve(url_.host, std::to_string(url_.port),
                           [&](const beast::error_code& e, tcp::resolver::results_type results) {
                             ec = e;
                             endpoints = std::move(results);
                             resolved = true;
                           });
    ioc.run_until(deadline);
    if (!resolved) {
      resolver.cancel();
      ioc.restart();
      ioc.run();
      return failure(beast::error::timeout, "resolving " + url_.host);
    }
    if (ec) return failure(ec, "resolving " + url_.host);
  }

  bhttp::request<bhttp::string_body> message;
  const bhttp::verb verb = bhttp::string_to_verb(request.method);
  if (verb == bhttp::verb::unknown) {
    message.method_string(request.method);
  } else {
    message.method(verb);
  }
  message.target(url_.base_path + request.target);
  message.version(11);
  const bool ipv6 = url_.host.find(':') != std::string::npos;
  message.set(bhttp::field::host,
              (ipv6 ? "[" + url_.host + "]" : url_.host) + ":" + std::to_string(url_.port));
  message.set(bhttp::field::user_agent, kUserAgent);
  for (const auto& [name, value] : request.headers) message.set(name, value);
  if (!request.body.empty()) {
    if (message.find(bhttp::field::content_type) == message.end()) {
      message.set(bhttp::field::content_type, "application/json");
    }
    message.body() = request.body;
  }
  message.keep_alive(false);
  message.prepare_payload();

  auto exchanged = [&] {
    if (url_.tls) {
      beast::ssl_stream<beast::tcp_stream> stream(ioc, *tls_context_);
      return exchange(stream, ioc, endpoints, url_, deadline, message, failure);
    }
    beast::tcp_stream stream(ioc);
    return exchange(stream, ioc, endpoints, url_, deadline, message, failure);
  }();
  if (!exchanged.isOk()) return exchanged.status();

  auto reply = std::move(exchanged).value();
  core::HttpResponse response;
  response.status = static_cast<int>(reply.result_int());
  response.content_type.clear();
  for (const auto& field : reply) {
    std::string name = lower(field.name_string());
    std::string value(field.value().data(), field.value().size());
    if (name == "content-type") response.content_type = value;
    response.headers.emplace_back(std::move(name), std::move(value));
  }
  response.body = std::move(reply.body());
  return response;
}

}  // namespace fabric_chaos::net
