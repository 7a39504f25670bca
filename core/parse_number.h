// ParseWhole<T>: all of a text as one number of type T, or nullopt. What keys, specs, file headers
// and client ids from outside are read with, so that every parser in the house agrees on what a
// number is:
//
//   - locale-independent (std::from_chars): "0.5" is one half whatever LC_NUMERIC an embedding app
//     set (std::strtod reads "0" then stops at the '.' under a decimal-comma locale such as
//     de_DE);
//   - an integer is decimal digits with a '-' only where T is signed; a floating-point value is
//     what from_chars's general format reads ("3", "-0.25", "1e-3", "inf" is refused: the value
//     must be finite);
//   - nothing else: no spaces, no '+', no "0x", nothing after the number, not the empty text; a
//     value outside T's range is nullopt.
//
// Callers add their own range checks and their own error messages, which name the key or spec.
// Thread-safe (a pure function).
#pragma once

#include <charconv>
#include <cmath>
#include <optional>
#include <string_view>
#include <system_error>
#include <type_traits>

namespace tributary {

template <class T>
std::optional<T> ParseWhole(std::string_view text) {
  static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>, "a number type");
  if (text.empty()) return std::nullopt;
  T value{};
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(value)) return std::nullopt;
  }
  return value;
}

}  // namespace tributary
