// EventLog: a RunObserver that appends every run event to a file, one JSON line each (the event's
// JSON form, run_events.h, plus the wall-clock time), flushed as written:
//
//   {"ts_ms":1764424331123,"event":"round_closed","round":3,"accepted":10,...}
//
// The file is opened for appending (created with its directory when missing), so a resumed run
// continues the same log. A write that fails is reported once as a warning and the run goes on.
#pragma once

#include <memory>
#include <string>

#include "coordinator/run_events.h"
#include "core/env.h"

namespace tributary {

class EventLog final : public RunObserver {
 public:
  static Result<std::unique_ptr<EventLog>> Open(Env* env, const std::string& path);
  void OnEvent(const RunEvent& event) override;

 private:
  EventLog() = default;
  std::string path_;
  std::unique_ptr<WritableFile> file_;
  bool warned_ = false;
};

}  // namespace tributary
