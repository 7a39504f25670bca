// SimRoundLine: the line tributary-sim prints for each round (in-process and --deploy):
//   round  37/100  acc  85.11%  loss 0.4102  up 7.6 MiB  down 7.6 MiB  520 ms (sim 3.10 s)
//       ETA 33.0 s  (unavail 1, dropped 0, late 2, refused 0)  attempts 2     (one line)
// Bytes and durations in the unit that fits (core/human_units.h); accuracy and loss only for
// evaluated rounds; the parenthesis only when a client was unavailable, dropped out, was late or
// was refused; attempts only past the first; then malicious clients and epsilon when there are
// any. The ETA is the wall time so far per round times the rounds left.
#pragma once

#include <cstdint>
#include <string>

#include "sim/sim_result.h"

namespace tributary {

// Without the newline. `total` is the run's number of rounds.
std::string SimRoundLine(const SimRound& round, int64_t total);

}  // namespace tributary
