// Coordinate-wise robust rules (Yin et al. 2018, "Byzantine-Robust Distributed Learning"):
//   median:             out[j] = median of the n updates' coordinate j (the mean of the two middle
//                       values when n is even);
//   trimmed_mean(beta): out[j] = mean of coordinate j after dropping the k = floor(beta * n)
//                       smallest and the k largest values (0 <= beta < 0.5, so 2k < n always).
// With f Byzantine updates among n, the median (f < n/2) and the trimmed mean (k >= f) stay within
// the honest updates' range in every coordinate.
//
// Needs every update: see RobustRule for the memory bound. Finalize transposes blocks of
// coordinates into per-coordinate columns (cache-friendly) and selects with std::nth_element,
// O(n) per coordinate, the blocks spread over the rule's threads.
#pragma once

#include "aggregation/robust_rule.h"

namespace tributary {

class CoordinateWise final : public RobustRule {
 public:
  // beta in [0, 0.5) is validated by MakeStrategy.
  static std::unique_ptr<CoordinateWise> Median(const RobustOptions& options);
  static std::unique_ptr<CoordinateWise> TrimmedMean(double beta, const RobustOptions& options);

  // The number of values dropped at each end for a round of n updates.
  int64_t TrimCount(int64_t n) const;

 protected:
  int64_t MinUpdates() const override { return 1; }
  std::string Requirement() const override { return "n >= 1"; }
  void Aggregate(std::span<float> out) override;

 private:
  CoordinateWise(std::string name, double beta, const RobustOptions& options)
      : RobustRule(std::move(name), options), beta_(beta) {}

  double beta_;  // < 0: median
};

}  // namespace tributary
