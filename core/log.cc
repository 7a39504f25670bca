#include "core/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <string>

namespace tributary {

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
  return Status::Ok();
}

}  // namespace tributary
