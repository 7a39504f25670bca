// Simulated time in two forms: seconds as a double (what the simulator adds and orders events by)
// and the engine's TimePoint (integer nanoseconds of core/clock.h's clock; the engines' deadlines).
//
// SimTimePoint rounds to the nearest nanosecond, so SimTimePoint(SimSeconds(t)) == t for every t
// up to 2^50 ns (13 days of simulated time; the two roundings' error stays far below half a
// nanosecond there). Truncating instead lands some time points a nanosecond early: a wake-up read
// from a deadline and handed back would come before that deadline, which would then never pass.
#pragma once

#include <chrono>

#include "core/clock.h"

namespace tributary {

inline TimePoint SimTimePoint(double seconds) {
  return TimePoint{} +
         std::chrono::round<TimePoint::duration>(std::chrono::duration<double>(seconds));
}

inline double SimSeconds(TimePoint t) {
  return std::chrono::duration<double>(t - TimePoint{}).count();
}

}  // namespace tributary
