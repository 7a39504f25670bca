// Logging to stderr for Tributary's own programs (tributary-coordinator, tributary-client, the
// simulator, the tools, the Python module): spdlog's default logger writes
// "[14:02:11.123] [info] message" to stderr, and the library's lines (core/log.h) go to the same
// logger. Apps that embed the client do not link this (tributary_stderr_log): they install their
// own handler (tributary/log.h).
#pragma once

#include <string_view>

#include "tributary/status.h"

namespace tributary {

// level: trace, debug, info, warn, error, critical or off. InvalidArgument names a bad level.
// Makes a stderr logger spdlog's default and installs a handler that sends the library's lines to
// it (replacing whatever handler was installed before). Call it from main().
Status InitLogging(std::string_view level);

}  // namespace tributary
