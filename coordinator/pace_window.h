// PaceWindow: pace steering's come-back window (docs/tier.md, "Pace steering"), the same for the
// coordinator (RoundEngine) and an aggregator (AggregatorService).
//
// The operator's pace.window_s, or, when it is 0, one derived from the fleet and the rounds' pace,
// as the production system suggests (Bonawitz et al. 2019, section 2.3: devices are told to come
// back "as frequently as needed to run all scheduled FL tasks, but not more"): the `away` clients
// sent away now are needed back at the rate rounds take clients, `per_round` every round cycle
// `cycle` (one round's start to the next's), so their returns are spread over as many cycles as
// it takes the rounds to need them all:
//   window = ceil(away / per_round) * cycle,   at least 1 s, at most a week.
// A fleet sent away therefore returns at about the pace it is selected, instead of in a burst the
// size of the fleet (a window too short) or too late for the next rounds (one too long).
//
// Stateless and thread-safe.
#pragma once

#include <chrono>
#include <cstddef>

#include "coordinator/round_config.h"
#include "core/clock.h"

namespace tributary {

// Tracks the round cycle: the time between the starts of the last two rounds seen; before there
// are two, `first_guess` (the round's deadline: no round takes longer). Not thread-safe.
class RoundCycle {
 public:
  void OnRoundStart(uint64_t round, TimePoint now);
  std::chrono::milliseconds cycle(std::chrono::milliseconds first_guess) const;

 private:
  uint64_t round_ = 0;
  TimePoint started_{};
  std::chrono::milliseconds cycle_{0};  // 0: not measured yet
};

std::chrono::milliseconds PaceWindow(const RoundConfig& config, size_t away, size_t per_round,
                                     std::chrono::milliseconds cycle);

}  // namespace tributary
