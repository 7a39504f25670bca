// Finite-difference gradient checking for CPU layers.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "core/rng.h"

namespace tributary::testing {

// Central difference of f at x[i], in double, with step eps.
inline double NumericGrad(const std::function<double()>& f, float* x, double eps) {
  const float saved = *x;
  *x = static_cast<float>(saved + eps);
  const double up = f();
  *x = static_cast<float>(saved - eps);
  const double down = f();
  *x = saved;
  return (up - down) / (2 * eps);
}

// Compares analytic[i] with the numeric gradient at up to `samples` random coordinates of x.
// Returns the worst relative error |a - n| / max(1e-2, |a| + |n|). A coordinate whose numeric
// gradient changes between steps eps and eps/2 sits on a kink (ReLU, max-pool switch) where finite
// differences are meaningless; it is skipped, and the check fails if more than 10% are skipped.
inline double WorstRelativeError(const std::function<double()>& f, std::vector<float>& x,
                                 const std::vector<float>& analytic, int samples, uint64_t seed,
                                 double eps = 1e-2) {
  Rng rng(seed);
  double worst = 0.0;
  const size_t count = std::min<size_t>(samples, x.size());
  size_t skipped = 0;
  for (size_t s = 0; s < count; ++s) {
    const size_t i = x.size() <= static_cast<size_t>(samples) ? s : rng.UniformInt(x.size());
    const double num = NumericGrad(f, &x[i], eps);
    const double half = NumericGrad(f, &x[i], eps / 2);
    if (std::abs(num - half) > 0.02 * (std::abs(num) + std::abs(half)) + 1e-4) {
      ++skipped;
      continue;
    }
    const double err =
        std::abs(num - analytic[i]) / std::max(1e-2, std::abs(num) + std::abs(analytic[i]));
    worst = std::max(worst, err);
  }
  EXPECT_LE(skipped * 10, count) << "too many coordinates on kinks: " << skipped << " of " << count;
  return worst;
}

}  // namespace tributary::testing
