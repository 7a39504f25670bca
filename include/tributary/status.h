// Status: the outcome of an operation that can fail, carried across API boundaries.
//
// A Status is either OK or holds an error code plus a human-readable message that names what was
// wrong (the file, the key, the field). Functions return Status (or Result<T>, see result.h) rather
// than printing and returning false. Status is a value type: cheap to copy when OK,
// thread-compatible.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <string_view>

namespace tributary {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,     // the caller passed something malformed (config, flag, argument)
  kNotFound = 2,            // a file, tensor or key does not exist
  kIoError = 3,             // the OS failed a read, write, fsync, ...
  kCorruption = 4,          // bytes from outside do not parse (bad magic, truncated, inconsistent)
  kOutOfRange = 5,          // a value or length exceeds a configured bound
  kFailedPrecondition = 6,  // the object is not in a state that allows the call
  kResourceExhausted = 7,   // a cap on memory, connections or frames was hit
  kUnavailable = 8,         // a peer or device is not reachable right now; retrying may help
  kDeadlineExceeded = 9,    // a timeout passed
  kPermissionDenied = 10,   // authentication or authorization failed
  kAborted = 11,            // the operation was cancelled (shutdown, stop())
  kUnimplemented = 12,      // the feature is not built in (e.g. CUDA in a CPU-only build)
  kInternal = 13,           // an invariant broke; a bug
};

// Returns a stable name such as "InvalidArgument".
std::string_view StatusCodeName(StatusCode code);

class Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message);

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) {
    return {StatusCode::kInvalidArgument, std::move(msg)};
  }
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status IoError(std::string msg) { return {StatusCode::kIoError, std::move(msg)}; }
  static Status Corruption(std::string msg) { return {StatusCode::kCorruption, std::move(msg)}; }
  static Status OutOfRange(std::string msg) { return {StatusCode::kOutOfRange, std::move(msg)}; }
  static Status FailedPrecondition(std::string msg) {
    return {StatusCode::kFailedPrecondition, std::move(msg)};
  }
  static Status ResourceExhausted(std::string msg) {
    return {StatusCode::kResourceExhausted, std::move(msg)};
  }
  static Status Unavailable(std::string msg) { return {StatusCode::kUnavailable, std::move(msg)}; }
  static Status DeadlineExceeded(std::string msg) {
    return {StatusCode::kDeadlineExceeded, std::move(msg)};
  }
  static Status PermissionDenied(std::string msg) {
    return {StatusCode::kPermissionDenied, std::move(msg)};
  }
  static Status Aborted(std::string msg) { return {StatusCode::kAborted, std::move(msg)}; }
  static Status Unimplemented(std::string msg) {
    return {StatusCode::kUnimplemented, std::move(msg)};
  }
  static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }

  bool ok() const { return state_ == nullptr; }
  StatusCode code() const { return state_ ? state_->code : StatusCode::kOk; }
  // Empty when OK.
  const std::string& message() const;
  // "OK" or "<CodeName>: <message>".
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>"; OK stays OK.
  Status WithContext(std::string_view context) const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code() == b.code() && a.message() == b.message();
  }

 private:
  struct State {
    StatusCode code;
    std::string message;
  };
  std::shared_ptr<const State> state_;  // null means OK
};

std::ostream& operator<<(std::ostream& os, const Status& s);

}  // namespace tributary

// Propagates a non-OK Status from an expression that yields a Status.
#define TRIB_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::tributary::Status _trib_status = (expr);   \
    if (!_trib_status.ok()) return _trib_status; \
  } while (0)
