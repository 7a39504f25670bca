#include "core/log.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <functional>
#include <mutex>
#include <string>
#include <utility>

#include "tributary/log.h"

namespace tributary {
namespace {

using Forward = std::function<void(const spdlog::details::log_msg&)>;

// The one sink behind Log(). base_sink calls sink_it_ with its mutex held, which is what makes
// the handler's calls never overlap, and lets Install promise that the old handler is not running
// once it returns.
class HandlerSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  // `forward` receives the lines at `level` and above; null drops everything.
  void Install(spdlog::level::level_enum level, Forward forward) {
    Forward previous;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      level_ = forward ? level : spdlog::level::off;
      previous = std::exchange(forward_, std::move(forward));
    }
    // Destroyed outside the lock: whatever it captured is the caller's, not ours to run under it.
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    // The logger's level is checked before this, but a line that passed the previous handler's
    // level may arrive just after Install: this keeps a handler from seeing lines below its own.
    if (forward_ && msg.level >= level_) forward_(msg);
  }
  void flush_() override {}

 private:
  spdlog::level::level_enum level_ = spdlog::level::off;  // GUARDED_BY(mutex_)
  Forward forward_;                                       // GUARDED_BY(mutex_)
};

struct LibraryLogger {
  LibraryLogger() : sink(std::make_shared<HandlerSink>()), logger("tributary-library", sink) {
    logger.set_level(spdlog::level::off);
    // spdlog reports a failing sink (a handler that threw) on stderr by default; a library that
    // promises silence drops that too.
    logger.set_error_handler([](const std::string&) {});
  }
  std::shared_ptr<HandlerSink> sink;
  spdlog::logger logger;
};

LibraryLogger& Library() {
  // Leaked on purpose: threads the app did not join may still log while statics are destroyed.
  static LibraryLogger* const library = new LibraryLogger();
  return *library;
}

void Install(spdlog::level::level_enum level, Forward forward) {
  // Two installs at once must not leave the logger's level from one and the handler from the other.
  static std::mutex* const install_mu = new std::mutex();
  std::lock_guard<std::mutex> lock(*install_mu);
  LibraryLogger& l = Library();
  if (!forward) level = spdlog::level::off;
  l.sink->Install(level, std::move(forward));
  l.logger.set_level(level);
}

spdlog::level::level_enum ToSpdlog(LogLevel level) {
  switch (level) {
    case LogLevel::kTrace:
      return spdlog::level::trace;
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
    case LogLevel::kOff:
      break;
  }
  return spdlog::level::off;
}

LogLevel FromSpdlog(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
      return LogLevel::kTrace;
    case spdlog::level::debug:
      return LogLevel::kDebug;
    case spdlog::level::info:
      return LogLevel::kInfo;
    case spdlog::level::warn:
      return LogLevel::kWarn;
    default:
      return LogLevel::kError;  // err and critical: the library logs no critical lines
  }
}

}  // namespace

spdlog::logger& Log() { return Library().logger; }

Status InitLogging(std::string_view level) {
  auto lvl = spdlog::level::from_str(std::string(level));
  if (lvl == spdlog::level::off && level != "off")
    return Status::InvalidArgument(
        "log level '" + std::string(level) +
        "' is not one of trace, debug, info, warn, error, critical, off");
  auto logger = spdlog::get("tributary");
  if (!logger) logger = spdlog::stderr_color_mt("tributary");
  logger->set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  logger->set_level(lvl);
  spdlog::set_default_logger(logger);
  // The library's lines keep the time they were logged at and share the tools' pattern and sink.
  Install(lvl, [logger](const spdlog::details::log_msg& m) {
    logger->log(m.time, m.source, m.level, m.payload);
  });
  return Status::Ok();
}

void SetLogHandler(LogLevel level, LogCallback callback) {
  const spdlog::level::level_enum lvl = ToSpdlog(level);
  if (!callback || lvl == spdlog::level::off) {
    Install(spdlog::level::off, nullptr);
    return;
  }
  Install(lvl, [callback = std::move(callback)](const spdlog::details::log_msg& m) {
    try {
      callback(FromSpdlog(m.level), std::string_view(m.payload.data(), m.payload.size()));
    } catch (...) {
      // A handler that throws loses the line (log.h says so), not the library thread that
      // logged it.
    }
  });
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
