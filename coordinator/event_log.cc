#include "coordinator/event_log.h"

#include <cerrno>
#include <chrono>
#include <cstring>

namespace tributary {

Result<std::unique_ptr<EventLog>> EventLog::Open(const std::string& path) {
  std::unique_ptr<EventLog> log(new EventLog());
  if (path.empty()) return log;
  log->file_ = std::fopen(path.c_str(), "a");
  if (!log->file_)
    return Status::IoError("cannot open event log " + path + ": " + std::strerror(errno));
  return log;
}

EventLog::~EventLog() {
  if (file_) std::fclose(file_);
}

void EventLog::Write(const std::string& event, nlohmann::json fields) {
  if (!file_) return;
  nlohmann::json line = nlohmann::json::object();
  line["ts_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  line["event"] = event;
  for (auto it = fields.begin(); it != fields.end(); ++it) line[it.key()] = it.value();
  const std::string text = line.dump() + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  std::fwrite(text.data(), 1, text.size(), file_);
  std::fflush(file_);
}

}  // namespace tributary
