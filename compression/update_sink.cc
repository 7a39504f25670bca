#include "compression/update_sink.h"

#include "core/check.h"
#include "core/simd.h"

namespace tributary {

namespace {

// The dense folds, dispatched (core/simd.h): the AVX2 copy rounds each operation as the baseline
// does (no FMA), so sums are bitwise the same on every CPU.
TRIB_SIMD_CLONES void AxpyF32(float* __restrict dst, const float* __restrict src, size_t n,
                              float scale) {
  for (size_t i = 0; i < n; ++i) dst[i] += scale * src[i];
}

TRIB_SIMD_CLONES void FoldFixedPoint(int64_t* __restrict dst, const float* __restrict src, size_t n,
                                     double k) {
  for (size_t i = 0; i < n; ++i) dst[i] += static_cast<int64_t>(static_cast<double>(src[i]) * k);
}

}  // namespace

void BufferSink::AddDense(size_t offset, std::span<const float> values, float scale) {
  TRIB_CHECK(offset <= target_.size() && values.size() <= target_.size() - offset,
             "dense write out of range");
  AxpyF32(target_.data() + offset, values.data(), values.size(), scale);
}

void BufferSink::AddSparse(std::span<const uint32_t> index, std::span<const float> values,
                           float scale) {
  TRIB_CHECK_EQ(index.size(), values.size(), "sparse write with mismatched lengths");
  float* dst = target_.data();
  const size_t n = target_.size();
  for (size_t i = 0; i < index.size(); ++i) {
    TRIB_DCHECK(index[i] < n, "sparse index out of range");
    (void)n;
    dst[index[i]] += scale * values[i];
  }
}

void FixedPointSink::AddDense(size_t offset, std::span<const float> values, float scale) {
  TRIB_CHECK(offset <= target_.size() && values.size() <= target_.size() - offset,
             "dense write out of range");
  FoldFixedPoint(target_.data() + offset, values.data(), values.size(),
                 static_cast<double>(scale) * kOne);
}

void FixedPointSink::AddSparse(std::span<const uint32_t> index, std::span<const float> values,
                               float scale) {
  TRIB_CHECK_EQ(index.size(), values.size(), "sparse write with mismatched lengths");
  const double k = static_cast<double>(scale) * kOne;
  int64_t* dst = target_.data();
  for (size_t i = 0; i < index.size(); ++i) {
    TRIB_DCHECK(index[i] < target_.size(), "sparse index out of range");
    dst[index[i]] += static_cast<int64_t>(static_cast<double>(values[i]) * k);
  }
}

}  // namespace tributary
