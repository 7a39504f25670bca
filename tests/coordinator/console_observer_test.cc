// The coordinator's round line (coordinator/console_observer.h): bytes and durations in the unit
// that fits, and the counts by the names the event log uses (accepted of selected, refused).
#include "coordinator/console_observer.h"

#include <gtest/gtest.h>

namespace tributary {
namespace {

RoundClosed Closed(uint64_t bytes_up, uint64_t bytes_down, double seconds) {
  RoundClosed c;
  c.summary.round = 3;
  c.summary.selected = 10;
  c.summary.accepted = 9;
  c.summary.refused = 1;
  c.summary.dropped = 0;
  c.summary.bytes_up = bytes_up;
  c.summary.bytes_down = bytes_down;
  c.summary.duration_s = seconds;
  return c;
}

TEST(ConsoleObserverTest, ARoundLineShowsSmallUpdatesInBytesNotZeroMegabytes) {
  // The softmax regression of the issue: 780-byte updates, once printed "up 0.0 MB".
  EXPECT_EQ(RoundLine(Closed(7020, 7800, 0.0412), 20),
            "round   3/20  updates 9/10 (refused 1, dropped 0)  up 6.9 KiB  down 7.6 KiB  41 ms");
  EXPECT_EQ(RoundLine(Closed(780, 780, 0.004), 5),
            "round   3/5  updates 9/10 (refused 1, dropped 0)  up 780 B  down 780 B  4.0 ms");
}

TEST(ConsoleObserverTest, ARoundLineShowsLargeTransfersAndLongRoundsInTheirUnits) {
  RoundClosed c = Closed(796957000, 3ull << 30, 150);
  c.evaluation = Evaluated{3, 3, 0.44321, 0.8421, 10000};
  EXPECT_EQ(RoundLine(c, 20),
            "round   3/20  test-acc 84.21%  test-loss 0.4432  updates 9/10 (refused 1, dropped 0)  "
            "up 760.0 MiB  down 3.0 GiB  2.5 min");
  c.summary.dp = DpRoundReport{};
  c.summary.dp->epsilon = 0.4371;
  c.summary.dp->clip_norm = 0.257;
  EXPECT_NE(RoundLine(c, 20).find("2.5 min  eps 0.437  clip 0.257"), std::string::npos)
      << RoundLine(c, 20);
}

}  // namespace
}  // namespace tributary
