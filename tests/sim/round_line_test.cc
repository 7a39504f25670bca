// tributary-sim's round line (sim/round_line.h): bytes and durations in the unit that fits, the
// counts by the event log's names.
#include "sim/round_line.h"

#include <gtest/gtest.h>

namespace tributary {
namespace {

TEST(SimRoundLineTest, SmallAndLargeNumbersInTheirUnits) {
  SimRound r;
  r.round = 37;
  r.attempts = 1;
  r.bytes_up = 780;  // once "up 0.8 kB"; the coordinator's line said "0.0 MB"
  r.bytes_down = 796957000;
  r.wall_seconds = 0.52;
  r.wall_clock = 19.24;  // 0.52 s per round so far: 63 rounds left take 32.8 s
  r.sim_seconds = 3.1;
  EXPECT_EQ(SimRoundLine(r, 100),
            "round  37/100  up 780 B  down 760.0 MiB  520 ms (sim 3.10 s)  ETA 32.8 s");

  r.evaluated = true;
  r.test_accuracy = 0.8511;
  r.test_loss = 0.41023;
  r.refused = 2;
  r.stragglers = 2;
  r.attempts = 3;
  r.sim_seconds = 150;
  EXPECT_EQ(SimRoundLine(r, 100),
            "round  37/100  acc  85.11%  loss 0.4102  up 780 B  down 760.0 MiB  520 ms (sim 2.5 "
            "min)  ETA 32.8 s  (unavail 0, dropped 0, late 2, refused 2)  attempts 3");
}

}  // namespace
}  // namespace tributary
