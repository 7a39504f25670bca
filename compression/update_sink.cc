#include "compression/update_sink.h"

#include "core/check.h"

namespace tributary {

void BufferSink::AddDense(size_t offset, std::span<const float> values, float scale) {
  TRIB_CHECK(offset <= target_.size() && values.size() <= target_.size() - offset,
             "dense write out of range");
  float* __restrict dst = target_.data() + offset;
  const float* __restrict src = values.data();
  const size_t n = values.size();
  for (size_t i = 0; i < n; ++i) dst[i] += scale * src[i];
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
  int64_t* __restrict dst = target_.data() + offset;
  const float* __restrict src = values.data();
  const double k = static_cast<double>(scale) * kOne;
  const size_t n = values.size();
  for (size_t i = 0; i < n; ++i) dst[i] += static_cast<int64_t>(static_cast<double>(src[i]) * k);
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
