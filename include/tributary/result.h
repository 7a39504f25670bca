// Result<T>: a T, or the Status that explains why there is none.
//
//   Result<ModelWeights> w = LoadSafetensors(path);
//   if (!w.ok()) return w.status();
//   use(*w);
//
// Accessing value() of an error Result is a programming error and aborts with the status message.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <utility>
#include <variant>

#include "tributary/status.h"

namespace tributary {

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (std::get<Status>(v_).ok()) v_ = Status::Internal("Result constructed from an OK Status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  // OK when the Result holds a value.
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

  T& value() & {
    Check();
    return std::get<T>(v_);
  }
  const T& value() const& {
    Check();
    return std::get<T>(v_);
  }
  T&& value() && {
    Check();
    return std::get<T>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void Check() const {
    if (!ok()) {
      std::fprintf(stderr, "Result::value() on error: %s\n",
                   std::get<Status>(v_).ToString().c_str());
      std::abort();
    }
  }
  std::variant<T, Status> v_;
};

}  // namespace tributary

#define TRIB_CONCAT_INNER_(a, b) a##b
#define TRIB_CONCAT_(a, b) TRIB_CONCAT_INNER_(a, b)
#define TRIB_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()

// Evaluates `expr` (a Result<T>); on error returns its Status, otherwise assigns the value to
// `lhs`.
//   TRIB_ASSIGN_OR_RETURN(auto weights, LoadSafetensors(path));
#define TRIB_ASSIGN_OR_RETURN(lhs, expr) \
  TRIB_ASSIGN_OR_RETURN_IMPL_(TRIB_CONCAT_(_trib_result_, __LINE__), lhs, expr)
