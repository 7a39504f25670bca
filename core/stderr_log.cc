#include "core/stderr_log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <string>

#include "tributary/log.h"

namespace tributary {
namespace {

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
    case spdlog::level::off:
      return LogLevel::kOff;
    default:
      return LogLevel::kError;  // err and critical
  }
}

}  // namespace

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
  // The library's lines share the programs' pattern and sink.
  SetLogHandler(FromSpdlog(lvl),
                [logger](LogLevel l, std::string_view line) { logger->log(ToSpdlog(l), line); });
  return Status::Ok();
}

}  // namespace tributary
