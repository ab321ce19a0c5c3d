#include "core/http_message.h"

#include <nlohmann/json.hpp>

namespace fabric_chaos::core {

int httpStatusFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
      return 409;
    case StatusCode::kFailedPrecondition:
      return 409;
    case StatusCode::kUnprocessable:
      return 422;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kUnauthenticated:
      return 401;
    case StatusCode::kNotSupported:
      return 501;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kTimeout:
      return 504;
    case StatusCode::kAborted:
      return 409;
    case StatusCode::kInternal:
      return 500;
  }
  return 500;
}

HttpResponse jsonErrorResponse(const Status& status) {
  HttpResponse response;
  const StatusCode code = status.isOk() ? StatusCode::kInternal : status.code();
  response.status = httpStatusFor(code);
  nlohmann::json body = {
      {"error",
       {{"code", statusCodeName(code)},
        {"message", status.isOk() ? "error response for an OK status" : status.message()}}}};
  response.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return response;
}

StatusCode statusCodeForHttp(int http_status) {
  if (http_status < 400) return StatusCode::kOk;
  switch (http_status) {
    case 400:
      return StatusCode::kInvalidArgument;
    case 401:
      return StatusCode::kUnauthenticated;
    case 403:
      return StatusCode::kPermissionDenied;
    case 404:
      return StatusCode::kNotFound;
    case 409:
      return StatusCode::kFailedPrecondition;
    case 413:
      return StatusCode::kInvalidArgument;
    case 422:
      return StatusCode::kUnprocessable;
    case 501:
      return StatusCode::kNotSupported;
    case 503:
      return StatusCode::kUnavailable;
    case 504:
      return StatusCode::kTimeout;
    default:
      return http_status < 500 ? StatusCode::kInvalidArgument : StatusCode::kInternal;
  }
}

}  // namespace fabric_chaos::core
