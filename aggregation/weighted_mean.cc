#include "aggregation/weighted_mean.h"

#include <cmath>
#include <string>

namespace tributary {

void WeightedMean::Reset(size_t dim) {
  sum_.assign(dim, 0);
  total_weight_ = 0.0;
  inv_scale_ = 0.0;
  count_ = 0;
}

Status WeightedMean::Add(double weight, const UpdateWriter& writer) {
  if (!(weight > 0.0) || !std::isfinite(weight))
    return Status::InvalidArgument(std::string(owner_) +
                                   ": update weight must be a positive number");
  FixedPointSink sink(sum_);
  writer(sink, static_cast<float>(weight));
  total_weight_ += weight;
  inv_scale_ = 1.0 / (total_weight_ * FixedPointSink::kOne);
  ++count_;
  return Status::Ok();
}

Status WeightedMean::CheckUpdate(const UpdateStats& stats, double weight) const {
  if (stats.max_abs * weight >= FixedPointSink::kMaxFixedPointTerm)
    return Status::InvalidArgument("update values are out of range for " + std::string(owner_) +
                                   "'s fixed-point sum: max |value| " +
                                   std::to_string(stats.max_abs) + " times weight " +
                                   std::to_string(weight) + " reaches 2^30");
  return Status::Ok();
}

Status WeightedMean::MeanInto(std::span<float> out) const {
  if (count_ == 0)
    return Status::FailedPrecondition(std::string(owner_) + ": no updates to aggregate");
  if (out.size() != sum_.size())
    return Status::Internal(std::string(owner_) + ": mean target has the wrong size");
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(MeanAt(i));
  return Status::Ok();
}

}  // namespace tributary
