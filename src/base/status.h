// Status and Result<T>: the error type of every fallible call below the server (loaders, parsers,
// tokenizer, API validation, deploy). Kernels and the forward pass use K3_CHECK instead (check.h).
//
// A Status is ok, or a code plus a message that names the thing that failed, what was expected and what
// was found, and where possible how to fix it ("model-00001.safetensors: tensor 'x' has shape [3] but
// the config needs [4]").
#pragma once

#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace k3 {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad input from a user: flags, requests, files
  kNotFound,         // missing file, tensor, key
  kDataLoss,         // corrupt or truncated file
  kIoError,          // the OS said no
  kUnimplemented,    // a valid input we do not support (yet)
  kInternal,         // a bug in k3stack
  kResourceExhausted,
  kUnavailable,  // not a fault: the thing is shutting down, asleep, or not up yet (HTTP 503)
  kSentinel,
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "NotFound: model.safetensors.index.json: no such file"
  std::string ToString() const;

  // Returns a copy whose message is "prefix: message" (adds context while an error bubbles up).
  Status WithPrefix(std::string_view prefix) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }

template <typename... Args>
Status InvalidArgument(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kInvalidArgument, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status NotFound(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kNotFound, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status DataLoss(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kDataLoss, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status IoError(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kIoError, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status Unimplemented(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kUnimplemented, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status Unavailable(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kUnavailable, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status Internal(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kInternal, fmt::format(f, std::forward<Args>(args)...));
}

// Result<T> holds a T or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    if (std::get<Status>(v_).ok()) v_ = Status(StatusCode::kInternal, "Result built from an ok Status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace k3

#define K3_CONCAT_INNER(a, b) a##b
#define K3_CONCAT(a, b) K3_CONCAT_INNER(a, b)

// K3_RETURN_IF_ERROR(expr): returns the Status of expr (a Status) when it is not ok.
#define K3_RETURN_IF_ERROR(expr)              \
  do {                                        \
    ::k3::Status k3_status_ = (expr);         \
    if (!k3_status_.ok()) return k3_status_;  \
  } while (0)

// K3_ASSIGN_OR_RETURN(lhs, expr): evaluates expr (a Result<T>); on error returns its Status, else moves
// the value into lhs (which may be a declaration: `K3_ASSIGN_OR_RETURN(auto file, Open(path));`).
#define K3_ASSIGN_OR_RETURN(lhs, expr) K3_ASSIGN_OR_RETURN_IMPL(K3_CONCAT(k3_result_, __LINE__), lhs, expr)
#define K3_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
