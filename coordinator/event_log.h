// EventLog: the coordinator's metrics as JSON lines, one event per line, flushed as written.
//
//   {"ts_ms":1764424331123,"event":"round_end","round":3,"completed":10,...}
//
// Events: run_start, round_start... (see docs/operations.md). A null/empty path disables logging.
// Thread-safe.
#pragma once

#include <cstdio>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "tributary/result.h"

namespace tributary {

class EventLog {
 public:
  // Appends to `path` (created if missing). An empty path gives a log that drops everything.
  static Result<std::unique_ptr<EventLog>> Open(const std::string& path);
  ~EventLog();

  // Writes {"ts_ms": now, "event": name, ...fields}.
  void Write(const std::string& event, nlohmann::json fields = nlohmann::json::object());

 private:
  EventLog() = default;
  std::mutex mu_;
  std::FILE* file_ = nullptr;  // guarded by mu_
};

}  // namespace tributary
