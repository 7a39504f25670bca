#include "aggregation/weighted_mean.h"

#include <string>

namespace tributary {

void WeightedMean::Reset(size_t dim) {
  partial_ = PartialSum::Zero(dim);
  inv_scale_ = 0.0;
}

Status WeightedMean::Add(uint64_t weight, const UpdateWriter& writer) {
  if (Status s = partial_.CheckWeight(weight); !s.ok()) return s.WithContext(owner_);
  FixedPointSink sink(partial_.sum, weight);
  writer(sink, 1.0f);
  partial_.total_weight += weight;
  ++partial_.count;
  inv_scale_ = 1.0 / (static_cast<double>(partial_.total_weight) * FixedPointSink::kOne);
  return Status::Ok();
}

Status WeightedMean::AddDense(uint64_t weight, std::span<const uint8_t> bytes, float scale) {
  if (Status s = partial_.CheckWeight(weight); !s.ok()) return s.WithContext(owner_);
  if (bytes.size() != dim() * sizeof(float))
    return Status::InvalidArgument(std::string(owner_) + ": a dense update of " +
                                   std::to_string(bytes.size()) + " bytes for " +
                                   std::to_string(dim()) + " values");
  FixedPointSink sink(partial_.sum, weight);
  const int32_t largest = FixedPointSink::LargestBitsFor(weight);
  if (sink.FoldDenseBytes(bytes, scale, largest) > largest)
    return Status::OutOfRange(std::string(owner_) + ": a value is not finite or out of range");
  partial_.total_weight += weight;
  ++partial_.count;
  inv_scale_ = 1.0 / (static_cast<double>(partial_.total_weight) * FixedPointSink::kOne);
  return Status::Ok();
}

Status WeightedMean::CheckUpdate(const UpdateStats& stats, uint64_t weight) const {
  if (Status s = partial_.CheckWeight(weight); !s.ok()) return s.WithContext(owner_);
  if (!(stats.max_abs * static_cast<double>(weight) < FixedPointSink::kMaxFixedPointTerm))
    return Status::InvalidArgument("update values are out of range for " + std::string(owner_) +
                                   "'s fixed-point sum: max |value| " +
                                   std::to_string(stats.max_abs) + " times weight " +
                                   std::to_string(weight) + " reaches 2^30");
  return Status::Ok();
}

Status WeightedMean::Merge(const PartialSum& partial) {
  if (Status s = partial.Check(dim()); !s.ok()) return s.WithContext(owner_);
  if (Status s = partial_.Add(partial); !s.ok()) return s.WithContext(owner_);
  if (partial_.total_weight > 0)
    inv_scale_ = 1.0 / (static_cast<double>(partial_.total_weight) * FixedPointSink::kOne);
  return Status::Ok();
}

Status WeightedMean::MeanInto(std::span<float> out) const {
  if (partial_.count == 0)
    return Status::FailedPrecondition(std::string(owner_) + ": no updates to aggregate");
  if (out.size() != partial_.sum.size())
    return Status::Internal(std::string(owner_) + ": mean target has the wrong size");
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(MeanAt(i));
  return Status::Ok();
}

}  // namespace tributary
