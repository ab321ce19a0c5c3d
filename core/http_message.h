#pragma once
// Transport-neutral HTTP request/response values and the Status -> HTTP status mapping, shared by
// the controller's REST API (server/api) and the agent's API (agent/), which both run behind the
// same Beast transport and both answer errors as {"error": {"code", "message"}}.

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::core {

struct HttpRequest {
  std::string method;                          // "GET"
  std::string target;                          // "/v1/runs?state=passed"
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  // The client's IP address as the transport saw it ("" when unknown, e.g. in tests): what
  // unauthenticated refusals are counted by (server/auth/refusal_limiter.h).
  std::string peer = {};
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

// A response that is written piece by piece (Server-Sent Events, text/event-stream): the transport
// calls next() every pollIntervalMs() and writes the text it returns, until done. next() runs on
// a transport thread and must not block for long.
class EventStream {
 public:
  struct Chunk {
    std::string text;  // "event: x\ndata: {...}\n\n" blocks; may be empty
    bool done = false;
  };
  virtual ~EventStream() = default;
  virtual Chunk next() = 0;
  virtual int pollIntervalMs() const { return 500; }
};

// kInvalidArgument 400, kNotFound 404, kUnprocessable 422, kPermissionDenied 403, ...
int httpStatusFor(StatusCode code);

// {"error": {"code": "NOT_FOUND", "message": "..."}} with the HTTP status for the code.
HttpResponse jsonErrorResponse(const Status& status);

// The inverse, for clients: a StatusCode for an HTTP status (404 -> kNotFound, 5xx -> ...).
StatusCode statusCodeForHttp(int http_status);

}  // namespace fabric_chaos::core
