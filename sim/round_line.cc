#include "sim/round_line.h"

#include <fmt/format.h>

#include "core/human_units.h"

namespace tributary {

std::string SimRoundLine(const SimRound& r, int64_t total) {
  const double eta = r.round == 0 ? 0.0
                                  : r.wall_clock / static_cast<double>(r.round) *
                                        static_cast<double>(total - static_cast<int64_t>(r.round));
  std::string line = fmt::format("{} {:3}/{}  ", r.async ? "step" : "round", r.round, total);
  if (r.evaluated)
    line += fmt::format("acc {:6.2f}%  loss {:.4f}  ", 100 * r.test_accuracy, r.test_loss);
  line += fmt::format(
      "up {}  down {}  {} (sim {})  ETA {}", FormatBytes(static_cast<double>(r.bytes_up)),
      FormatBytes(static_cast<double>(r.bytes_down)), FormatDuration(r.wall_seconds),
      FormatDuration(r.sim_seconds), FormatDuration(eta));
  if (r.unavailable + r.dropouts + r.stragglers + r.refused > 0)
    line += fmt::format("  (unavail {}, dropped {}, late {}, refused {})", r.unavailable,
                        r.dropouts, r.stragglers, r.refused);
  if (r.attempts > 1) line += fmt::format("  attempts {}", r.attempts);
  if (r.malicious > 0) line += fmt::format("  malicious {}", r.malicious);
  if (r.dp) line += fmt::format("  eps {:.3f}  clip {:.3g}", r.epsilon, r.dp_clip_norm);
  if (r.async)
    line += fmt::format("  staleness {:.2f} (max {})", r.staleness_mean, r.staleness_max);
  return line;
}

}  // namespace tributary
