// RunRecorder: a RunObserver that keeps every event, for tests that check what a run published.
// Not thread-safe: read it once the run has finished (observers run on the engine's strand).
#pragma once

#include <string>
#include <vector>

#include "coordinator/run_events.h"

namespace tributary::testing {

struct RunRecorder final : RunObserver {
  void OnEvent(const RunEvent& e) override { events.push_back(e); }
  // Every event's name, in order.
  std::vector<std::string> Names() const {
    std::vector<std::string> out;
    for (const RunEvent& e : events) out.emplace_back(RunEventName(e));
    return out;
  }
  // The events of type T, in order.
  template <class T>
  std::vector<T> All() const {
    std::vector<T> out;
    for (const RunEvent& e : events)
      if (auto* x = std::get_if<T>(&e)) out.push_back(*x);
    return out;
  }
  std::vector<RunEvent> events;
};

}  // namespace tributary::testing
