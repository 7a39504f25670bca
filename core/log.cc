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

// One line stays one line, and shows what it holds: a control character (a newline, a carriage
// return, an escape that would drive the terminal; C0, DEL, and C1 as UTF-8) becomes \n, \r or
// \xNN. Text from peers (an Error's message, a device or tensor name) goes into lines, and could
// otherwise forge a line that blames another client. Tabs and other UTF-8 pass unchanged.
// The length of the control character at line[i]: 1 for C0 (but a tab) or DEL, 2 for a C1 in
// UTF-8 (0xc2 0x80..0x9f), 0 for none.
size_t ControlAt(std::string_view line, size_t i) {
  const auto c = static_cast<unsigned char>(line[i]);
  if ((c < 0x20 && c != '\t') || c == 0x7f) return 1;
  if (c != 0xc2 || i + 1 >= line.size()) return 0;
  const auto next = static_cast<unsigned char>(line[i + 1]);
  return next >= 0x80 && next <= 0x9f ? 2 : 0;
}

bool NeedsEscape(std::string_view line) {
  for (size_t i = 0; i < line.size(); ++i)
    if (ControlAt(line, i) != 0) return true;
  return false;
}

std::string Escaped(std::string_view line) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(line.size() + 16);
  for (size_t i = 0; i < line.size(); ++i) {
    const size_t n = ControlAt(line, i);
    if (n == 0) {
      out += line[i];
      continue;
    }
    i += n - 1;
    const auto code = static_cast<unsigned char>(line[i]);  // C1: its code point's low byte
    if (code == '\n') {
      out += "\\n";
    } else if (code == '\r') {
      out += "\\r";
    } else {
      out += "\\x";
      out += kHex[code >> 4];
      out += kHex[code & 0xf];
    }
  }
  return out;
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
    if (NeedsEscape(line)) {
      h.callback(level, Escaped(line));
    } else {
      h.callback(level, line);
    }
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
