// Simulated time's two forms (sim/sim_clock.h): a time point converted to seconds and back is
// itself, so a wake-up read from a deadline is delivered at that deadline, never before it.
#include "sim/sim_clock.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>

namespace tributary {
namespace {

TEST(SimClockTest, ATimePointThroughSecondsAndBackIsItself) {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int64_t> ns(0, int64_t{1} << 50);
  int truncating_misses = 0;
  for (int i = 0; i < 200000; ++i) {
    const TimePoint t = TimePoint{} + std::chrono::nanoseconds(ns(rng));
    const double s = SimSeconds(t);
    ASSERT_EQ(SimTimePoint(s), t) << (t - TimePoint{}).count() << " ns";
    // What truncating would give: some land a nanosecond early (the bug this rounding fixes).
    const TimePoint cut = TimePoint{} + std::chrono::duration_cast<TimePoint::duration>(
                                            std::chrono::duration<double>(s));
    if (cut < t) ++truncating_misses;
  }
  EXPECT_GT(truncating_misses, 1000);
}

TEST(SimClockTest, SecondsAreTheTimePointsCount) {
  EXPECT_EQ(SimSeconds(TimePoint{}), 0.0);
  EXPECT_EQ(SimSeconds(TimePoint{} + std::chrono::milliseconds(1500)), 1.5);
  EXPECT_EQ(SimTimePoint(45.25), TimePoint{} + std::chrono::microseconds(45250000));
}

}  // namespace
}  // namespace tributary
