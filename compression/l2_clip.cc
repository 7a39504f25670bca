#include "compression/l2_clip.h"

#include <cmath>
#include <string>

namespace tributary {

Result<double> L2Norm(std::span<const float> values) {
  double sq = 0.0;
  for (float v : values) sq += static_cast<double>(v) * v;
  const double norm = std::sqrt(sq);
  if (!std::isfinite(norm))
    return Status::InvalidArgument("the update's L2 norm is not finite (a value is NaN or inf)");
  return norm;
}

double LInfNorm(std::span<const float> values) {
  double m = 0.0;
  for (float v : values) {
    const double a = std::fabs(static_cast<double>(v));
    if (std::isnan(a)) return a;
    if (a > m) m = a;
  }
  return m;
}

Result<L2Clip> ClipL2(std::span<float> values, double max_norm) {
  if (!(max_norm > 0.0) || !std::isfinite(max_norm))
    return Status::InvalidArgument("the L2 clip norm " + std::to_string(max_norm) +
                                   " must be a finite number > 0");
  L2Clip c;
  TRIB_ASSIGN_OR_RETURN(c.norm, L2Norm(values));
  if (c.norm > max_norm) {
    c.clipped = true;
    c.factor = static_cast<float>(max_norm / c.norm);
    for (float& v : values) v *= c.factor;
  }
  return c;
}

}  // namespace tributary
