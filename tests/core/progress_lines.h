// ForceProgressLines: while alive, every Progress made (core/progress.h) logs a line on every
// Advance or Set and always its closing line (no quiet period, no interval, the clock read on every
// call); the destructor puts the previous defaults back. For tests of code that reports progress,
// which would otherwise have to run for a second. Not thread-safe to create two at once.
#pragma once

#include "core/progress.h"

namespace tributary::testing {

class ForceProgressLines {
 public:
  ForceProgressLines() : saved_(Progress::Defaults()) {
    Progress::Options every;
    every.quiet = Progress::Duration::zero();
    every.interval = Progress::Duration::zero();
    every.check_every = 1;
    Progress::SetDefaults(every);
  }
  ~ForceProgressLines() { Progress::SetDefaults(saved_); }
  ForceProgressLines(const ForceProgressLines&) = delete;
  ForceProgressLines& operator=(const ForceProgressLines&) = delete;

 private:
  Progress::Options saved_;
};

}  // namespace tributary::testing
