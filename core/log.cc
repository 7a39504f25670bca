#include "core/log.h"

#include <functional>
#include <mutex>
#include <string>
#include <utility>

namespace tributary {
namespace {

// The handler behind Log(), under one mutex: the handler's calls never overlap, and once Install
// has returned the previous handler is not running and will not be called again.
struct Handler {
  std::mutex mu;
  LogLevel level = LogLevel::kOff;  // GUARDED_BY(mu)
  LogCallback callback;             // GUARDED_BY(mu)
};

Handler& TheHandler() {
  // Leaked on purpose: threads the app did not join may still log while statics are destroyed.
  static Handler* const handler = new Handler();
  return *handler;
}

bool Valid(LogLevel level) {
  const int l = static_cast<int>(level);
  return l >= static_cast<int>(LogLevel::kTrace) && l < static_cast<int>(LogLevel::kOff);
}

}  // namespace

LibraryLogger& Log() {
  static LibraryLogger* const logger = new LibraryLogger();
  return *logger;
}

void LibraryLogger::Write(LogLevel level, std::string_view line) {
  Handler& h = TheHandler();
  std::lock_guard<std::mutex> lock(h.mu);
  // A line that passed the previous handler's level may arrive just after an install: this keeps
  // a handler from seeing lines below its own level.
  if (!h.callback || static_cast<int>(level) < static_cast<int>(h.level)) return;
  try {
    h.callback(level, line);
  } catch (...) {
    // A handler that throws loses the line (tributary/log.h says so), not the thread that logged.
  }
}

void SetLogHandler(LogLevel level, LogCallback callback) {
  // Two installs at once must not leave the logger's level from one and the handler from the other.
  static std::mutex* const install_mu = new std::mutex();
  std::lock_guard<std::mutex> install(*install_mu);
  if (!callback || !Valid(level)) {
    level = LogLevel::kOff;
    callback = nullptr;
  }
  Handler& h = TheHandler();
  LogCallback previous;
  {
    std::lock_guard<std::mutex> lock(h.mu);
    h.level = level;
    previous = std::exchange(h.callback, std::move(callback));
  }
  Log().set_level(level);
  // `previous` is destroyed here, outside the handler's lock: what it captured is the caller's.
}

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kTrace:
      return "trace";
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
    case LogLevel::kOff:
      return "off";
  }
  return "unknown";
}

}  // namespace tributary
