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

// The streaming accumulator of FedAvg-like strategies: a fixed-point sum with 32 fractional bits.
//
// Integer addition is associative, so the sum is bitwise identical whatever order the updates
// arrive in: a coordinator resumed from a checkpoint, or a simulation on any number of threads,
// reproduces the aggregate exactly. Each term scale * value is rounded toward zero to a multiple of
// 2^-32 (an absolute error below 2.4e-10 per term) and must satisfy |scale * value| < 2^30
// (kMaxFixedPointTerm), which callers check when they validate an update, so the sum of up to 2^32
// terms cannot overflow.
class FixedPointSink final : public UpdateSink {
 public:
  static constexpr double kOne = 4294967296.0;                // 2^32
  static constexpr double kMaxFixedPointTerm = 1073741824.0;  // 2^30

  explicit FixedPointSink(std::span<int64_t> target) : target_(target) {}
  size_t size() const override { return target_.size(); }
  void AddDense(size_t offset, std::span<const float> values, float scale) override;
  void AddSparse(std::span<const uint32_t> index, std::span<const float> values,
                 float scale) override;

 private:
  std::span<int64_t> target_;
};

}  // namespace tributary
