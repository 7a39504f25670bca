// Logging control for apps that embed Tributary.
//
// The library writes nothing to stdout or stderr on its own. What it logs (one line per task,
// connection events, reconnects, refusals) goes to one handler for the whole process, and there
// is none until the app installs one:
//
//   tributary::SetLogHandler(tributary::LogLevel::kInfo,
//                            [](tributary::LogLevel level, std::string_view message) {
//                              std::fprintf(stderr, "[tributary %s] %.*s\n",
//                                           tributary::LogLevelName(level).data(),
//                                           static_cast<int>(message.size()), message.data());
//                            });
//
// or, equivalently, sets ClientOptions::log_level and log_callback (client.h), which a
// Client::Create that succeeds installs with this function. The library logs through a logger of
// its own, never through spdlog's default logger, so an app that uses spdlog keeps its setup.
//
// Process-wide: there is one handler, shared by every Client in the process. Installing one
// replaces the previous one (the last installed wins) and it stays installed until replaced,
// including after the Client that installed it is destroyed. SetLogHandler(LogLevel::kOff,
// nullptr) removes it, making the library silent again.
//
// The handler:
//   - receives `message` without a timestamp, level or trailing newline: one line of text, valid
//     only during the call (copy it to keep it);
//   - is called from the library's threads (the I/O thread, the worker thread that runs the
//     Trainer), possibly also from a thread that calls into the library; calls never overlap: the
//     library holds a lock around each one, so a handler needs no locking of its own;
//   - should return quickly (the I/O thread waits for it) and must not call back into the
//     library (log through it, SetLogHandler, create or destroy a Client): the lock is not
//     reentrant. An exception it throws is caught and the line dropped.
// After SetLogHandler returns, the previous handler is not running and will not be called again,
// so whatever it captured may be freed then.
//
// Tributary's own tools (tributary-client, tributary-coordinator, ...) install a handler that
// writes to stderr; this header is how an app does the same, or sends the lines to its own log.
#pragma once

#include <functional>
#include <string_view>

namespace tributary {

enum class LogLevel { kTrace = 0, kDebug = 1, kInfo = 2, kWarn = 3, kError = 4, kOff = 5 };

// Called once per line at or above the level it was installed with (never with kOff).
using LogCallback = std::function<void(LogLevel level, std::string_view message)>;

// Installs `callback` for the whole process, to receive the lines at `level` and above; replaces
// the handler installed before. A null callback, LogLevel::kOff or a value outside the enum makes
// the library silent.
// Thread-safe; see above for when it may not be called.
void SetLogHandler(LogLevel level, LogCallback callback);

// "trace", "debug", "info", "warn", "error", "off"; "unknown" for values outside the enum.
// Static storage, NUL-terminated.
std::string_view LogLevelName(LogLevel level);

}  // namespace tributary
