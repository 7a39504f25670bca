// UnixSeconds: the wall-clock time now, as seconds since the Unix epoch (with a fraction), for
// records that people and other programs read (the run history, the dashboard). Durations and
// deadlines use core/clock.h's steady Clock instead.
#pragma once

#include <chrono>

namespace tributary {

inline double UnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace tributary
