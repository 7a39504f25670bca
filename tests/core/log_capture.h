// LogCapture: collects what the library logs (core/log.h) while alive, as "<level>|<line>"
// ("warn|security: ..."), by installing a process-wide handler at `level`; the destructor makes the
// library silent again. For tests that check what is logged; not thread-safe to create two at once.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "tributary/log.h"

namespace tributary::testing {

class LogCapture {
 public:
  explicit LogCapture(LogLevel level = LogLevel::kTrace) {
    SetLogHandler(level, [this](LogLevel l, std::string_view line) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back(std::string(LogLevelName(l)) + "|" + std::string(line));
    });
  }
  ~LogCapture() { SetLogHandler(LogLevel::kOff, nullptr); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::vector<std::string> lines() const {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> lines_;
};

}  // namespace tributary::testing
