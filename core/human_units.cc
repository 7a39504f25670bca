#include "core/human_units.h"

#include <fmt/format.h>

#include <cmath>

namespace tributary {

std::string FormatBytes(double bytes) {
  if (!std::isfinite(bytes)) return "n/a";
  if (bytes < 0) return "-" + FormatBytes(-bytes);
  if (std::round(bytes) < 1024) return fmt::format("{:.0f} B", bytes);
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = bytes / 1024;
  size_t unit = 0;
  // The unit is chosen after rounding to one decimal, so that 1023.96 KiB reads "1.0 MiB".
  while (std::round(v * 10) >= 1024 * 10 && unit + 1 < std::size(kUnits)) {
    v /= 1024;
    ++unit;
  }
  return fmt::format("{:.1f} {}", v, kUnits[unit]);
}

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds)) return "n/a";
  if (seconds < 0) return "-" + FormatDuration(-seconds);
  const double ms = seconds * 1e3;
  if (seconds == 0) return "0 s";
  // Each branch tests the value as it will be printed, so that 0.9996 s reads "1.00 s".
  if (std::round(ms * 1e3) < 1000) return fmt::format("{:.0f} \xC2\xB5s", ms * 1e3);
  if (std::round(ms * 10) < 100) return fmt::format("{:.1f} ms", ms);
  if (std::round(ms) < 1000) return fmt::format("{:.0f} ms", ms);
  if (std::round(seconds * 100) < 1000) return fmt::format("{:.2f} s", seconds);
  if (std::round(seconds * 10) < 600) return fmt::format("{:.1f} s", seconds);
  if (std::round(seconds / 6) < 600) return fmt::format("{:.1f} min", seconds / 60);
  return fmt::format("{:.1f} h", seconds / 3600);
}

}  // namespace tributary
