// Logging through spdlog. Call InitLogging once from main(); then use spdlog::info(...) etc.
// Lines look like "[14:02:11.123] [info] message". Thread-safe (spdlog's default logger is).
#pragma once

#include <spdlog/spdlog.h>

#include <string_view>

#include "tributary/status.h"

namespace tributary {

// level: trace, debug, info, warn, error, critical or off. InvalidArgument names a bad level.
Status InitLogging(std::string_view level);

}  // namespace tributary
