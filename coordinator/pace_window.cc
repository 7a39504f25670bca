#include "coordinator/pace_window.h"

#include <algorithm>

namespace tributary {

void RoundCycle::OnRoundStart(uint64_t round, TimePoint now) {
  if (round == round_) return;  // a retried attempt: the same round
  if (round_ != 0 && now > started_)
    cycle_ = std::chrono::duration_cast<std::chrono::milliseconds>(now - started_);
  round_ = round;
  started_ = now;
}

std::chrono::milliseconds RoundCycle::cycle(std::chrono::milliseconds first_guess) const {
  return cycle_.count() > 0 ? cycle_ : first_guess;
}

std::chrono::milliseconds PaceWindow(const RoundConfig& config, size_t away, size_t per_round,
                                     std::chrono::milliseconds cycle) {
  if (config.pace_window.count() > 0) return config.pace_window;
  using std::chrono::milliseconds;
  constexpr milliseconds kShortest{1'000}, kLongest{7LL * 24 * 3600 * 1000};
  const size_t cycles =
      (away + std::max<size_t>(1, per_round) - 1) / std::max<size_t>(1, per_round);
  const double ms = static_cast<double>(cycles) * static_cast<double>(cycle.count());
  if (!(ms < static_cast<double>(kLongest.count()))) return kLongest;
  return std::max(kShortest, milliseconds(static_cast<int64_t>(ms)));
}

}  // namespace tributary
