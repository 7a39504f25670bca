// WeightedMean: the streaming accumulator shared by FedAvg and the server optimizers.
//
// It folds each client delta, weighted by its integer aggregation weight (num_examples), into a
// PartialSum (partial_sum.h: an exact fixed-point sum per coordinate, FixedPointSum: 8 bytes per
// parameter whatever the number of clients, 24 once a round's terms are large enough to carry), so
// the weighted mean does not depend on the order in which updates arrive, nor on how they were
// split among processes whose partial sums are merged.
//
// Exact: the weight is an integer, the same in the terms (FixedPointSink multiplies by it in
// double, exact below 2^53) and in the normaliser (the integer total, at most 2^53 and so exact
// as a double). CheckUpdate is the running bound callers consult before Add: it refuses an
// update whose weight would take the round's total past 2^53, or whose values are out of the
// fixed point's range (|weight * value| >= 2^30); within those bounds no sum can overflow.
//
// Not thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "aggregation/partial_sum.h"
#include "aggregation/strategy.h"

namespace tributary {

class WeightedMean {
 public:
  // `owner` names the strategy in error messages.
  explicit WeightedMean(std::string_view owner) : owner_(owner) {}

  // Clears the sum and sizes it for a model of `dim` floats.
  void Reset(size_t dim);
  // Folds one update of weight `weight` (the writer is called with scale 1; the sink applies the
  // weight). InvalidArgument, and nothing folded, when CheckWeight refuses `weight`. Callers
  // check the values with CheckUpdate first.
  Status Add(uint64_t weight, const UpdateWriter& writer);
  // OK when an update with largest |value| max_abs and weight `weight` fits the sum: weight >= 1,
  // the total weight stays <= 2^53, and |weight * value| < 2^30; else InvalidArgument naming the
  // owner and the numbers.
  Status CheckUpdate(const UpdateStats& stats, uint64_t weight) const;
  // Add and CheckUpdate of a dense update's bytes (DenseCodec's form) in one pass over them
  // (FixedPointSink::FoldDenseBytes), every value multiplied by `scale` in [0, 1]. OK when folded;
  // OutOfRange when a value is not finite or out of CheckUpdate's range, and then nothing changed
  // (the caller names the problem: DenseCodec::Validate, CheckUpdate); InvalidArgument when
  // CheckWeight refuses `weight` or the bytes are not dim() floats.
  Status AddDense(uint64_t weight, std::span<const uint8_t> bytes, float scale);
  // Adds another process's partial sum of the same round (exact). InvalidArgument naming the
  // owner when it does not pass partial.Check(dim()) or the total weight would pass 2^53.
  Status Merge(const PartialSum& partial);
  const PartialSum& partial() const { return partial_; }

  size_t count() const { return partial_.count; }
  uint64_t total_weight() const { return partial_.total_weight; }
  size_t dim() const { return partial_.dim(); }

  // The weighted mean of the deltas, coordinate i, in double precision. count() > 0.
  double MeanAt(size_t i) const { return static_cast<double>(partial_.sum.At(i)) * inv_scale_; }
  // Writes the mean into `out` (out.size() == dim()). FailedPrecondition when count() == 0.
  Status MeanInto(std::span<float> out) const;

 private:
  std::string_view owner_;
  PartialSum partial_;
  double inv_scale_ = 0.0;  // 1 / (total_weight * 2^32)
};

}  // namespace tributary
