// RefusalDigest: the ClientRefused events (coordinator/run_events.h) that refusals at Hello make,
// naming every client refused, in a number a flood of refusals cannot grow without limit.
//
// Refusals are grouped by (client id, code) within a window. The first refusal of a group in a
// window is returned by Note at once, as it came (count 1, seconds 0). Further ones of the group in
// that window are only counted; when the window is over (at the first Note or Flush after it, or
// Flush(force)) each group that had more gives one event: their count, the window's length in
// seconds, the latest address, and the window's first reason. At most `max_groups` groups are kept
// per window; refusals of further groups are counted into one event of client "*" (with the latest
// one's address, reason and code) at the window's end. So a window yields at most
// 2 * max_groups + 1 events, whatever arrives in it.
//
// Reasons longer than kMaxReasonBytes are cut there (they hold what the client sent: its codecs).
//
// A pure state machine: time comes from the caller. Not thread-safe: one strand calls it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/run_events.h"
#include "core/clock.h"

namespace tributary {

class RefusalDigest {
 public:
  static constexpr size_t kMaxReasonBytes = 512;

  explicit RefusalDigest(Duration window = std::chrono::seconds(10), size_t max_groups = 100);

  // One refusal (count and seconds are ignored). Returns the events to publish now: the summaries
  // of a window that is over, then this refusal when it is the first of its group in the window.
  std::vector<ClientRefused> Note(ClientRefused refusal, TimePoint now);
  // The summaries of the window, when it is over (or `force`: the run is ending). The next
  // refusal starts a new window.
  std::vector<ClientRefused> Flush(TimePoint now, bool force = false);

 private:
  struct Group {
    ClientRefused latest;  // address and code of the latest, reason of the first
    uint64_t counted = 0;  // beyond the first, which was reported at once
  };
  void EndWindow(TimePoint now, std::vector<ClientRefused>& out);

  const Duration window_;
  const size_t max_groups_;
  bool started_ = false;
  TimePoint window_start_{};
  std::map<std::pair<std::string, std::string>, Group> groups_;  // by (client, code)
  ClientRefused rest_;  // refusals of groups beyond max_groups_ (count 0: none)
};

}  // namespace tributary
