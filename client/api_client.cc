#include "client/api_client.h"

#include "core/http_message.h"
#include "net/http_client.h"

namespace fabric_chaos::client {
namespace {

using core::Status;
using core::StatusCode;
using nlohmann::json;

class HttpApiClient : public ApiClient {
 public:
  HttpApiClient(const std::string& base_url, std::string token, int timeout_ms, net::TlsOptions tls)
      : http_(base_url, timeout_ms, std::move(tls)), token_(std::move(token)) {}

  core::Result<ApiReply> call(const std::string& method, const std::string& target,
                              const json* body) override {
    core::HttpRequest request;
    request.method = method;
    request.target = target;
    request.headers["accept"] = "application/json";
    if (!token_.empty()) request.headers["authorization"] = "Bearer " + token_;
    if (body != nullptr) request.body = body->dump();
    auto response = http_.send(request);
    if (!response.isOk()) return response.status();
    ApiReply reply;
    reply.http_status = response->status;
    if (response->body.empty()) return reply;
    reply.body = json::parse(response->body, nullptr, /*allow_exceptions=*/false);
    if (reply.body.is_discarded()) {
      if (reply.ok()) {
        return Status(StatusCode::kInternal,
                      method + " " + http_.baseUrl() + target + ": the server answered HTTP " +
                          std::to_string(reply.http_status) + " with a body that is not JSON");
      }
      // An error page from a proxy, say: keep its text as the message.
      reply.body = json{{"error", {{"code", ""}, {"message", response->body.substr(0, 300)}}}};
    }
    return reply;
  }

  std::string baseUrl() const override { return http_.baseUrl(); }

 private:
  net::HttpClient http_;
  std::string token_;  // never logged, never part of an error message
};

}  // namespace

std::unique_ptr<ApiClient> makeHttpApiClient(const std::string& base_url, const std::string& token,
                                             int timeout_ms, net::TlsOptions tls) {
  return std::make_unique<HttpApiClient>(base_url, token, timeout_ms, std::move(tls));
}

Status replyError(const ApiReply& reply, const std::string& what) {
  std::string code;
  std::string message;
  if (reply.body.is_object()) {
    if (auto e = reply.body.find("error"); e != reply.body.end() && e->is_object()) {
      code = e->value("code", "");
      message = e->value("message", "");
    }
  }
  std::string text = what + ": HTTP " + std::to_string(reply.http_status);
  if (!code.empty()) text += " " + code;
  if (!message.empty()) text += ": " + message;
  StatusCode status_code = core::statusCodeForHttp(reply.http_status);
  if (status_code == StatusCode::kOk) status_code = StatusCode::kInternal;  // an unexpected 3xx
  return Status(status_code, text, reply.http_status);
}

}  // namespace fabric_chaos::client
