#pragma once
// Status and Result<T>: the one error currency across module boundaries. A Status carries a code
// (mapped to an HTTP status at the API edge), a human sentence, and the original errno / NLE_* /
// SQLite code so that a failure can be traced to the system call that produced it.

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace fabric_chaos::core {

enum class StatusCode {
  kOk,
  kInvalidArgument,     // the caller's input is malformed (HTTP 400)
  kNotFound,            // the named thing does not exist (404)
  kAlreadyExists,       // (409)
  kFailedPrecondition,  // valid request, wrong state: e.g. run already finished (409)
  kUnprocessable,       // well-formed but refers to something absent, e.g. a target (422)
  kPermissionDenied,    // EPERM / EACCES, or a refused blast radius (403)
  kUnauthenticated,     // (401)
  kNotSupported,        // the kernel or device lacks the feature (501)
  kUnavailable,         // transient: peer down, busy (503)
  kTimeout,             // (504)
  kAborted,             // cancelled on purpose
  kInternal,            // a bug or an unexpected system failure (500)
};

const char* statusCodeName(StatusCode code);

class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message, int origin = 0)
      : code_(code), message_(std::move(message)), origin_(origin) {}

  static Status ok() { return Status(); }

  bool isOk() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return isOk(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // The errno, NLE_* or SQLite result code the failure came from; 0 when none.
  int origin() const { return origin_; }

  // "NOT_FOUND: no such device (origin 19)"
  std::string toString() const;

  // Prefixes context: Status(kNotFound, "no such device").withContext("link down h1") gives
  // "link down h1: no such device".
  Status withContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  int origin_ = 0;
};

// Maps an errno to the closest StatusCode (ENODEV -> kNotFound, EPERM -> kPermissionDenied,
// EOPNOTSUPP -> kNotSupported, ...), keeping errno as origin and strerror in the message.
Status errnoStatus(int err, const std::string& what);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : data_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(data_).isOk() && "Result built from an OK status has no value");
  }

  bool isOk() const { return std::holds_alternative<T>(data_); }
  explicit operator bool() const { return isOk(); }

  const Status& status() const {
    static const Status kOkStatus;
    return isOk() ? kOkStatus : std::get<Status>(data_);
  }
  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace fabric_chaos::core

// Returns the Status from the enclosing function when `expr` is not OK.
#define FC_RETURN_IF_ERROR(expr)                      \
  do {                                                \
    ::fabric_chaos::core::Status fc_status_ = (expr); \
    if (!fc_status_.isOk()) return fc_status_;        \
  } while (0)

// `FC_ASSIGN_OR_RETURN(lhs, expr)`: evaluates expr (a Result<T>), returns its Status from the
// enclosing function when it is not OK, else moves its value into lhs (which may declare it:
// `FC_ASSIGN_OR_RETURN(const auto name, readName())`).
#define FC_STATUS_CONCAT_INNER(a, b) a##b
#define FC_STATUS_CONCAT(a, b) FC_STATUS_CONCAT_INNER(a, b)
#define FC_ASSIGN_OR_RETURN(lhs, expr) \
  FC_ASSIGN_OR_RETURN_IMPL(FC_STATUS_CONCAT(fc_result_, __LINE__), lhs, expr)
#define FC_ASSIGN_OR_RETURN_IMPL(result, lhs, expr) \
  auto result = (expr);                             \
  if (!result.isOk()) return result.status();       \
  lhs = std::move(result.value())
