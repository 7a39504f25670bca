// UpdateSink: where a decoded client update is written.
//
// Codecs (compression/) decode an update by calling AddDense/AddSparse on a sink, already scaled by
// the client's aggregation weight, so a sparse or quantized update is folded into an aggregate
// without a dense temporary. Callers validate the encoded update completely (sizes, index ranges,
// finiteness) before writing anything: a sink never sees half an update.
//
// Not thread-safe; one update is written at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tributary {

class UpdateSink {
 public:
  virtual ~UpdateSink() = default;
  // Number of floats in the model the update applies to.
  virtual size_t size() const = 0;
  // target[offset + i] += scale * values[i]; offset + values.size() <= size().
  virtual void AddDense(size_t offset, std::span<const float> values, float scale) = 0;
  // target[index[i]] += scale * values[i]; every index < size(), index.size() == values.size().
  virtual void AddSparse(std::span<const uint32_t> index, std::span<const float> values,
                         float scale) = 0;
};

// A sink that writes into one float buffer (a dense decode target).
class BufferSink final : public UpdateSink {
 public:
  explicit BufferSink(std::span<float> target) : target_(target) {}
  size_t size() const override { return target_.size(); }
  void AddDense(size_t offset, std::span<const float> values, float scale) override;
  void AddSparse(std::span<const uint32_t> index, std::span<const float> values,
                 float scale) override;

 private:
  std::span<float> target_;
};

// The largest magnitude among little-endian floats in `bytes` (any alignment), as a float's bits
// with the sign cleared: non-finite values have bits 0x7f800000 and up. One vectorized pass.
int32_t MaxMagnitudeBits(std::span<const uint8_t> bytes);

// One coordinate of a fixed-point sum's exact value: a signed 128-bit integer in 2^-32 units.
using FixedPoint = __int128;

// FixedPointSum: the streaming accumulator of FedAvg-like strategies, a fixed-point sum with 32
// fractional bits, exact for every run the configuration allows.
//
// Integer addition is associative, so the sum is bitwise identical whatever order the updates
// arrive in and however they are split into partial sums that are added later (a coordinator
// resumed from a checkpoint, a simulation on any number of threads, partial aggregates of several
// processes: aggregation/partial_sum.h).
//
// Why not a plain int64 per coordinate: a term may be as large as |weight * value| < 2^30 real
// (kMaxFixedPointTerm, which callers check when they validate an update: Strategy::CheckUpdate),
// i.e. 2^62 units, so an int64 could overflow at the second such term; weights go up to
// run.max_num_examples (2^30 by default). Why not 128 bits throughout: the fold would no longer
// vectorize (measured with bench/coordinator/aggregation_bench: 6x the CPU time of the int64 fold
// at 199,210 values, 2x at 10M; docs/compression.md). So the terms are folded into an int64 lane,
// and the lane is carried into a 128-bit wide lane (allocated at the first carry) whenever its
// running bound could pass 2^63:
//   - `bound_` is at least max_i |lane[i]|: each fold adds, per call, an upper bound of its
//     terms' magnitudes (an OR of them, cheap in the vectorized loop);
//   - before each fold, a bound >= 2^62 carries (wide += lane, lane = 0, bound = 0); the fold
//     then adds terms below 2^62 at most once per coordinate, so no lane ever passes 2^63.
// The value of coordinate i is wide[i] + lane[i]; at most 2^53 terms (a round's total weight,
// weighted_mean.h) of under 2^62 units sum below 2^115. Ordinary rounds never carry (terms of
// |weight * value| around 1 reach the bound after some 2^24 updates), so their cost is the int64
// fold's, 8 bytes per coordinate.
//
// Not thread-safe; a value type.
class FixedPointSum {
 public:
  static constexpr double kOne = 4294967296.0;                // 2^32
  static constexpr double kMaxFixedPointTerm = 1073741824.0;  // 2^30

  // A zero sum of `dim` coordinates (no wide lane).
  void Reset(size_t dim);
  size_t size() const { return lane_.size(); }
  // The exact value of coordinate i, in 2^-32 units.
  FixedPoint At(size_t i) const {
    return wide_.empty() ? FixedPoint{lane_[i]} : wide_[i] + lane_[i];
  }
  // Adds `other` (same size), exactly.
  void Add(const FixedPointSum& other);
  // Replaces the sum by `values` (each coordinate's exact value).
  void Assign(std::span<const FixedPoint> values);
  // Whether a carry into the wide lane has happened (for tests and the bench).
  bool wide() const { return !wide_.empty(); }
  bool operator==(const FixedPointSum& other) const;

 private:
  friend class FixedPointSink;
  // Carries the lane into the wide lane when the bound could pass 2^63 with one more term.
  void MakeRoom();
  void Carry();

  std::vector<int64_t> lane_;
  std::vector<FixedPoint> wide_;  // empty until the first carry
  uint64_t bound_ = 0;            // >= max_i |lane_[i]|
};

// A sink that folds weight * scale * value into a FixedPointSum. Each term is computed in double
// (the multiplier k = scale * weight * 2^32 is exact for an integer weight below 2^53 and scale 1),
// rounded toward zero to an int64 (an absolute error below 2^-32 = 2.4e-10 per term) and added.
// Callers guarantee |weight * scale * value| < 2^30 for every value (Strategy::CheckUpdate), with a
// factor 2 to spare for float rounding of clipped values, and that a sparse write names each index
// at most once (codecs validate increasing indices).
class FixedPointSink final : public UpdateSink {
 public:
  static constexpr double kOne = FixedPointSum::kOne;
  static constexpr double kMaxFixedPointTerm = FixedPointSum::kMaxFixedPointTerm;

  // weight >= 1 (an integer number of examples).
  explicit FixedPointSink(FixedPointSum& target, uint64_t weight = 1)
      : target_(target), weight_(static_cast<double>(weight)) {}
  size_t size() const override { return target_.size(); }
  void AddDense(size_t offset, std::span<const float> values, float scale) override;
  void AddSparse(std::span<const uint32_t> index, std::span<const float> values,
                 float scale) override;

  // A whole dense update straight from its bytes (sink.size() little-endian floats, any
  // alignment), validated as it is folded, in one pass over memory (DenseCodec::Validate and
  // DecodeInto take two). `largest` bounds the values' magnitudes, as a float's bits with the sign
  // cleared (the non-finite values' bits, 0x7f800000 and up, are above any finite bound). Returns
  // the largest magnitude bits of all the values: when that is at most `largest`, every
  // weight * scale * value was folded; otherwise nothing was (the fold is undone exactly: a value
  // above the bound counts as 0 both ways, and the others' terms negate exactly, the conversion
  // rounding toward zero), and the caller names the problem (Validate, CheckUpdate).
  // scale is in [0, 1] (an asynchronous update's staleness weight; 1 otherwise).
  //
  // One pass needs the conversion from double to int64 in vectors (x86-64's AVX-512, aarch64's
  // NEON); on x86-64 without AVX-512 the conversion is scalar, and FoldDenseBytes validates first
  // (a vectorized pass) and then folds, with the same result. Both ways are public for the tests
  // and benchmarks.
  int32_t FoldDenseBytes(std::span<const uint8_t> bytes, float scale, int32_t largest);
  int32_t FoldDenseBytesOnePass(std::span<const uint8_t> bytes, float scale, int32_t largest);
  int32_t FoldDenseBytesTwoPass(std::span<const uint8_t> bytes, float scale, int32_t largest);
  // The bits bound FoldDenseBytes takes for CheckUpdate's condition at weight `weight`: the
  // largest float magnitude x with x * weight < kMaxFixedPointTerm (exact in double).
  static int32_t LargestBitsFor(uint64_t weight);

 private:
  FixedPointSum& target_;
  double weight_;
};

}  // namespace tributary
