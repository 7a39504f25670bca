// PartialSum: the exact weighted sum of some of a round's updates, as a value: what WeightedMean
// (FedAvg, the server optimizers) accumulates, and what several processes that each fold part of
// a round (an aggregation tier, a multi-process simulation) send to the one that finalizes it.
//
// Adding partial sums is integer addition: Add(a, b) in any grouping and order gives bitwise the
// sum one process would have folded from the same updates (tests/aggregation/partial_sum_test.cc
// checks the model hash). A partial sum holds, per coordinate, the sum of weight * value in
// 2^-32 units (FixedPointSum: exact, an int64 lane carried into 128 bits), the total weight
// (the integer sum of the updates' num_examples) and the number of updates.
//
// Invariants (Check): every weight is >= 1, so count <= total_weight <= kMaxTotalWeight = 2^53,
// which keeps the total exact in the double that normalises the mean; each term is below 2^62
// units (kMaxFixedPointTerm), so |sum[i]| < count * 2^62; an empty sum (count 0) is all zero.
//
// Encode/Decode: a capped wire form (protocol/wire_archive.h: a size tag past its cap or past the
// bytes that remain is refused before anything is allocated), little-endian:
//   u32 version (1), u64 count, u64 total_weight, list<u64> low limbs, list<i64> high limbs
// where the high limbs list is empty when every coordinate fits in an int64 (the usual case) and
// otherwise has one entry per coordinate. Decode then runs Check.
//
// A value type; not thread-safe (copy it to share).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "compression/update_sink.h"
#include "tributary/result.h"

namespace tributary {

struct PartialSum {
  static constexpr uint64_t kMaxTotalWeight = uint64_t{1} << 53;

  FixedPointSum sum;          // per coordinate, 2^-32 units
  uint64_t total_weight = 0;  // sum of the updates' weights
  uint64_t count = 0;         // updates folded

  // An empty partial sum for a model of `dim` values.
  static PartialSum Zero(size_t dim);
  size_t dim() const { return sum.size(); }

  // OK when one more update of `weight` keeps the invariants; InvalidArgument naming the numbers
  // otherwise (weight 0, or the total weight would pass 2^53).
  Status CheckWeight(uint64_t weight) const;
  // Adds `other` (exact). InvalidArgument, and nothing changed, when the sizes differ or the
  // total weight would pass 2^53.
  Status Add(const PartialSum& other);
  // InvalidArgument naming the broken invariant (see the header comment), or a size other than
  // `dim`.
  Status Check(size_t dim) const;

  bool operator==(const PartialSum&) const = default;
};

// The wire form above. Encode fails only for a sum of more than kMaxPartialSumValues values.
inline constexpr uint64_t kMaxPartialSumValues = uint64_t{1} << 36;
Result<std::vector<uint8_t>> EncodePartialSum(const PartialSum& p);
// InvalidArgument naming the field for anything malformed, truncated, over its cap, with
// trailing bytes, of another version, or not of `dim` values; then Check(dim).
Result<PartialSum> DecodePartialSum(std::span<const uint8_t> bytes, size_t dim);

}  // namespace tributary
