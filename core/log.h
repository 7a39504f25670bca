// Logging through spdlog, in two streams:
//
//   Log()                 the library's logger. Code an app embeds with the client (client/,
//                         protocol/, compression/, crypto/, core/) logs through it:
//                         Log().info("joined {}", address). It forwards each line to the handler
//                         installed for the process (tributary/log.h SetLogHandler, which
//                         ClientOptions and the C API use, or InitLogging below) and drops it when
//                         there is none, so an app that asked for nothing sees nothing on stdout or
//                         stderr, and the app's own use of spdlog is left alone.
//   spdlog::info(...)     spdlog's default logger: the coordinator, the simulator and the tools,
//                         which only run in Tributary's own binaries.
//
// InitLogging(level), called once from a tool's main(), sends both to stderr as
// "[14:02:11.123] [info] message". Everything here is thread-safe.
#pragma once

#include <spdlog/spdlog.h>

#include <string_view>

#include "tributary/status.h"

namespace tributary {

// level: trace, debug, info, warn, error, critical or off. InvalidArgument names a bad level.
// Makes a stderr logger spdlog's default and installs it as the library's handler (replacing
// whatever handler was installed before).
Status InitLogging(std::string_view level);

// The library's logger (see above). It lives until the process exits, so it may be used from any
// thread at any time, including during static destruction.
spdlog::logger& Log();

}  // namespace tributary
