// ConsoleObserver: tributary-coordinator's progress output, a RunObserver.
//
// One line per closed round on stdout (RoundLine):
//   round   3/20  test-acc 84.21%  test-loss 0.4432  updates 10/10 (refused 0, dropped 0)
//       up 7.6 MiB  down 7.6 MiB  2.30 s                                (one line in the output)
// with bytes and the round's duration in the unit that fits (core/human_units.h: "780 B",
// "1.5 KiB", "250 ms", "2.5 min"),
// the resume point when a run resumes, and the final model at the end. Failed round attempts,
// refused updates and failed checkpoints are logged as warnings (the library logger, core/log.h),
// federated evaluations at info.
#pragma once

#include <string>

#include "coordinator/run_events.h"

namespace tributary {

// The line printed for a closed round of a run of `total_rounds`, without the newline.
std::string RoundLine(const RoundClosed& closed, int64_t total_rounds);

class ConsoleObserver final : public RunObserver {
 public:
  void OnEvent(const RunEvent& event) override;

 private:
  int64_t total_rounds_ = 0;
};

}  // namespace tributary
