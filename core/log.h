// The library's logger.
//
//   Log().info("joined {} as {}", address, id);   // fmt's format strings, checked at compile time
//
// Code an app embeds with the client (client/, protocol/, compression/, crypto/, privacy/, train/,
// core/) logs through Log(). Each line at or above the installed level is formatted and handed to
// the handler installed for the process (tributary/log.h SetLogHandler, which ClientOptions and
// the C API use, or InitLogging in core/stderr_log.h, which Tributary's own programs call). With no
// handler nothing is formatted or written, so an app that asked for nothing sees nothing on stdout
// or stderr. The library does not use spdlog: an app's spdlog setup is left alone, and an app links
// no logging library for Tributary (fmt formats the lines; TRIBUTARY_HEADER_ONLY_DEPS compiles it
// in).
//
// Thread-safe: Log() may be used from any thread at any time, including during static
// destruction (the logger is never destroyed).
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <iterator>
#include <string_view>
#include <utility>

#include "tributary/log.h"

namespace tributary {

class LibraryLogger {
 public:
  template <typename... Args>
  void trace(fmt::format_string<Args...> format, Args&&... args) {
    Emit(LogLevel::kTrace, format, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void debug(fmt::format_string<Args...> format, Args&&... args) {
    Emit(LogLevel::kDebug, format, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void info(fmt::format_string<Args...> format, Args&&... args) {
    Emit(LogLevel::kInfo, format, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void warn(fmt::format_string<Args...> format, Args&&... args) {
    Emit(LogLevel::kWarn, format, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void error(fmt::format_string<Args...> format, Args&&... args) {
    Emit(LogLevel::kError, format, std::forward<Args>(args)...);
  }
  // The library logs no critical lines of its own; a handler would see one as an error.
  template <typename... Args>
  void critical(fmt::format_string<Args...> format, Args&&... args) {
    Emit(LogLevel::kError, format, std::forward<Args>(args)...);
  }

  // Whether a line at `level` would reach a handler now.
  bool should_log(LogLevel level) const {
    return static_cast<int>(level) >= level_.load(std::memory_order_relaxed);
  }
  // Hands one formatted line to the handler (if it still takes `level`).
  void Write(LogLevel level, std::string_view line);
  // For SetLogHandler: the level below which lines are not even formatted.
  void set_level(LogLevel level) {
    level_.store(static_cast<int>(level), std::memory_order_relaxed);
  }

 private:
  template <typename... Args>
  void Emit(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
    if (!should_log(level)) return;
    fmt::memory_buffer buffer;
    fmt::format_to(std::back_inserter(buffer), format, std::forward<Args>(args)...);
    Write(level, std::string_view(buffer.data(), buffer.size()));
  }

  std::atomic<int> level_{static_cast<int>(LogLevel::kOff)};
};

// The library's logger (see above).
LibraryLogger& Log();

}  // namespace tributary
