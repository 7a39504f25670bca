// ConsoleObserver: tributary-coordinator's progress output, a RunObserver.
//
// One line per closed round on stdout:
//   round   3/20  test-acc 84.21%  test-loss 0.4432  updates 10/10 (refused 0, dropped 0)
//       up 8.0 MB  down 8.0 MB  2.3s                                    (one line in the output)
// the resume point when a run resumes, and the final model at the end. Failed round attempts,
// refused updates and failed checkpoints are logged as warnings (the library logger, core/log.h),
// federated evaluations at info.
#pragma once

#include "coordinator/run_events.h"

namespace tributary {

class ConsoleObserver final : public RunObserver {
 public:
  void OnEvent(const RunEvent& event) override;

 private:
  int64_t total_rounds_ = 0;
};

}  // namespace tributary
