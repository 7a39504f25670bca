// WeightedMean: the streaming accumulator shared by FedAvg and the server optimizers.
//
// It folds each client delta, scaled by its aggregation weight, into a FixedPointSink (8 bytes per
// parameter whatever the number of clients), so the weighted mean does not depend on the order in
// which updates arrive. Callers validate updates (finite, |weight * value| < 2^30) before writing.
//
// Not thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "aggregation/strategy.h"

namespace tributary {

class WeightedMean {
 public:
  // `owner` names the strategy in error messages.
  explicit WeightedMean(std::string_view owner) : owner_(owner) {}

  // Clears the sum and sizes it for a model of `dim` floats.
  void Reset(size_t dim);
  // InvalidArgument when `weight` is not a positive finite number; nothing is folded then.
  Status Add(double weight, const UpdateWriter& writer);
  // OK when an update with largest |value| max_abs fits the fixed-point sum at `weight`
  // (|weight * value| < 2^30); else InvalidArgument naming the owner and the numbers.
  Status CheckUpdate(const UpdateStats& stats, double weight) const;
  size_t count() const { return count_; }
  double total_weight() const { return total_weight_; }
  size_t dim() const { return sum_.size(); }

  // The weighted mean of the deltas, coordinate i, in double precision. count() > 0.
  double MeanAt(size_t i) const { return static_cast<double>(sum_[i]) * inv_scale_; }
  // Writes the mean into `out` (out.size() == dim()). FailedPrecondition when count() == 0.
  Status MeanInto(std::span<float> out) const;

 private:
  std::string_view owner_;
  std::vector<int64_t> sum_;  // fixed point, 2^-32 units
  double total_weight_ = 0.0;
  double inv_scale_ = 0.0;  // 1 / (total_weight * 2^32)
  size_t count_ = 0;
};

}  // namespace tributary
