#include "coordinator/event_log.h"

#include <chrono>
#include <filesystem>

#include "core/log.h"

namespace tributary {

Result<std::unique_ptr<EventLog>> EventLog::Open(Env* env, const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  if (!dir.empty()) TRIB_RETURN_IF_ERROR(env->CreateDirs(dir));
  std::unique_ptr<EventLog> log(new EventLog());
  log->path_ = path;
  TRIB_ASSIGN_OR_RETURN(log->file_, env->NewAppendableFile(path));
  return log;
}

void EventLog::OnEvent(const RunEvent& event) {
  // The time and the event's name first, for people reading the file.
  nlohmann::ordered_json line;
  line["ts_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  line["event"] = RunEventName(event);
  const nlohmann::json fields = ToJson(event);
  for (const auto& [key, value] : fields.items())
    if (key != "event") line[key] = value;
  // Client ids and refusal reasons come from the network: bytes that are not UTF-8 are replaced.
  const std::string text =
      line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  Status s = file_->Append(std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  if (!s.ok() && !warned_) {
    warned_ = true;
    Log().warn("event log {}: {} (further write errors are not reported)", path_, s.ToString());
  }
}

}  // namespace tributary
