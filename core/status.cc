#include "core/status.h"

#include <cerrno>
#include <cstring>

namespace fabric_chaos::core {

const char* statusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case StatusCode::kNotFound:
      return "NOT_FOUND";
    case StatusCode::kAlreadyExists:
      return "ALREADY_EXISTS";
    case StatusCode::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case StatusCode::kUnprocessable:
      return "UNPROCESSABLE";
    case StatusCode::kPermissionDenied:
      return "PERMISSION_DENIED";
    case StatusCode::kUnauthenticated:
      return "UNAUTHENTICATED";
    case StatusCode::kNotSupported:
      return "NOT_SUPPORTED";
    case StatusCode::kUnavailable:
      return "UNAVAILABLE";
    case StatusCode::kTimeout:
      return "TIMEOUT";
    case StatusCode::kAborted:
      return "ABORTED";
    case StatusCode::kInternal:
      return "INTERNAL";
  }
  return "UNKNOWN";
}

std::string Status::toString() const {
  if (isOk()) return "OK";
  std::string out = std::string(statusCodeName(code_)) + ": " + message_;
  if (origin_ != 0) out += " (origin " + std::to_string(origin_) + ")";
  return out;
}

Status Status::withContext(const std::string& context) const {
  if (isOk()) return *this;
  return Status(code_, context + ": " + message_, origin_);
}

Status errnoStatus(int err, const std::string& what) {
  StatusCode code = StatusCode::kInternal;
  switch (err) {
    case ENOENT:
    case ENODEV:
    case ESRCH:
    case ENXIO:
      code = StatusCode::kNotFound;
      break;
    case EPERM:
    case EACCES:
      code = StatusCode::kPermissionDenied;
      break;
    case EOPNOTSUPP:
    case ENOSYS:
    case EAFNOSUPPORT:
    case EPROTONOSUPPORT:
      code = StatusCode::kNotSupported;
      break;
    case EEXIST:
      code = StatusCode::kAlreadyExists;
      break;
    case EINVAL:
      code = StatusCode::kInvalidArgument;
      break;
    case EAGAIN:
    case EBUSY:
    case ECONNREFUSED:
    case ECONNRESET:
    case EHOSTUNREACH:
    case ENETUNREACH:
      code = StatusCode::kUnavailable;
      break;
    case ETIMEDOUT:
      code = StatusCode::kTimeout;
      break;
    default:
      break;
  }
  return Status(code, what + ": " + std::strerror(err), err);
}

}  // namespace fabric_chaos::core
