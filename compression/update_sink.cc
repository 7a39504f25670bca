#include "compression/update_sink.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "compression/dense_codec.h"
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

// Returns an OR of |term| - 1 (t ^ (t >> 63) is |t| for t >= 0 and |t| - 1 below): every term's
// magnitude is at most the result + 1. Vectorizes with the fold (an OR reduction).
TRIB_SIMD_CLONES uint64_t FoldFixedPoint(int64_t* __restrict dst, const float* __restrict src,
                                         size_t n, double k) {
  uint64_t magnitudes = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t t = static_cast<int64_t>(static_cast<double>(src[i]) * k);
    dst[i] += t;
    magnitudes |= static_cast<uint64_t>(t ^ (t >> 63));
  }
  return magnitudes;
}

// The largest of the n floats' bits with the sign bit cleared (an int32, so that the baseline
// copy, SSE2, has a vector max to use). Reads the bytes where they are (unaligned is fine).
TRIB_SIMD_CLONES int32_t MaxBits(const uint8_t* __restrict bytes, size_t n) {
  int32_t mx = 0;
  for (size_t i = 0; i < n; ++i) {
    int32_t bits;
    std::memcpy(&bits, bytes + i * sizeof(float), sizeof(bits));
    mx = std::max(mx, bits & 0x7fffffff);
  }
  return mx;
}

// Whether FoldFixedPointBytes's one pass is the faster way here. It needs the conversion from
// double to int64 in vectors: x86-64's comes with AVX-512 (the x86-64-v4 clone; AVX2 has none)
// and aarch64 has NEON's. Without it the conversion is scalar, the fused loop with it, and a
// vectorized validation pass followed by the fold is faster (a copy of both built for AVX2, CPU
// time: 163 against 293 µs at 199,210 floats in cache, the same at 10M).
bool OnePassFoldPays() {
#if defined(__x86_64__) && defined(TRIB_SIMD_NO_CLONES)
  return true;  // sanitizer builds (one copy): the tests run both ways anyway
#elif defined(__x86_64__) && !defined(__AVX2__)
  static const bool pays = __builtin_cpu_supports("avx512f") &&
                           __builtin_cpu_supports("avx512vl") &&
                           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
  return pays;
#elif defined(__x86_64__)
#if defined(__AVX512DQ__) && defined(__AVX512VL__)
  return true;  // built for this CPU (-march=native), with AVX-512
#else
  return false;
#endif
#else
  return true;
#endif
}

// FoldFixedPoint from raw bytes, with the largest magnitude's bits taken in the same pass; a value
// whose magnitude bits pass `largest` is folded as 0, so that every conversion is in range.
TRIB_SIMD_CLONES uint64_t FoldFixedPointBytes(int64_t* __restrict dst,
                                              const uint8_t* __restrict bytes, size_t n, double k,
                                              int32_t largest, int32_t* max_bits) {
  uint64_t magnitudes = 0;
  int32_t mx = 0;
  for (size_t i = 0; i < n; ++i) {
    int32_t bits;
    std::memcpy(&bits, bytes + i * sizeof(float), sizeof(bits));
    const int32_t m = bits & 0x7fffffff;
    mx = std::max(mx, m);
    // A mask, not a branch or a select: this form vectorizes (a select did not: 4x slower).
    const int32_t kept = bits & -static_cast<int32_t>(m <= largest);
    float value;
    std::memcpy(&value, &kept, sizeof(value));
    const int64_t t = static_cast<int64_t>(static_cast<double>(value) * k);
    dst[i] += t;
    magnitudes |= static_cast<uint64_t>(t ^ (t >> 63));
  }
  *max_bits = mx;
  return magnitudes;
}

constexpr uint64_t kCarryAt = uint64_t{1} << 62;

}  // namespace

int32_t MaxMagnitudeBits(std::span<const uint8_t> bytes) {
  return MaxBits(bytes.data(), bytes.size() / sizeof(float));
}

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

void FixedPointSum::Reset(size_t dim) {
  lane_.assign(dim, 0);
  wide_.clear();
  wide_.shrink_to_fit();
  bound_ = 0;
}

void FixedPointSum::Carry() {
  if (wide_.empty()) wide_.assign(lane_.size(), 0);
  for (size_t i = 0; i < lane_.size(); ++i) {
    wide_[i] += lane_[i];
    lane_[i] = 0;
  }
  bound_ = 0;
}

void FixedPointSum::MakeRoom() {
  if (bound_ >= kCarryAt) Carry();
}

void FixedPointSum::Add(const FixedPointSum& other) {
  TRIB_CHECK_EQ(lane_.size(), other.lane_.size(), "adding fixed-point sums of different sizes");
  if (other.wide_.empty() && bound_ < kCarryAt && other.bound_ < kCarryAt) {
    for (size_t i = 0; i < lane_.size(); ++i) lane_[i] += other.lane_[i];
    bound_ += other.bound_;  // below 2^63: no lane passes it
    return;
  }
  Carry();
  for (size_t i = 0; i < lane_.size(); ++i) wide_[i] += other.At(i);
}

void FixedPointSum::Assign(std::span<const FixedPoint> values) {
  Reset(values.size());
  FixedPoint largest = 0;
  for (FixedPoint v : values) largest = std::max(largest, v < 0 ? -v : v);
  if (largest >= static_cast<FixedPoint>(kCarryAt)) {
    wide_.assign(values.begin(), values.end());
    return;
  }
  for (size_t i = 0; i < values.size(); ++i) lane_[i] = static_cast<int64_t>(values[i]);
  bound_ = static_cast<uint64_t>(largest);
}

bool FixedPointSum::operator==(const FixedPointSum& other) const {
  if (size() != other.size()) return false;
  for (size_t i = 0; i < size(); ++i)
    if (At(i) != other.At(i)) return false;
  return true;
}

void FixedPointSink::AddDense(size_t offset, std::span<const float> values, float scale) {
  TRIB_CHECK(offset <= target_.size() && values.size() <= target_.size() - offset,
             "dense write out of range");
  target_.MakeRoom();
  const uint64_t magnitudes =
      FoldFixedPoint(target_.lane_.data() + offset, values.data(), values.size(),
                     static_cast<double>(scale) * weight_ * kOne);
  target_.bound_ += magnitudes + 1;
}

int32_t FixedPointSink::FoldDenseBytes(std::span<const uint8_t> bytes, float scale,
                                       int32_t largest) {
  return OnePassFoldPays() ? FoldDenseBytesOnePass(bytes, scale, largest)
                           : FoldDenseBytesTwoPass(bytes, scale, largest);
}

int32_t FixedPointSink::FoldDenseBytesTwoPass(std::span<const uint8_t> bytes, float scale,
                                              int32_t largest) {
  TRIB_CHECK_EQ(bytes.size(), target_.size() * sizeof(float), "dense bytes of the wrong size");
  TRIB_CHECK(scale >= 0.0f && scale <= 1.0f, "a dense fold's scale must be in [0, 1]");
  // Validation first, then the fold as the dense codec decodes into a sink (the same terms).
  const int32_t max_bits = MaxMagnitudeBits(bytes);
  if (max_bits <= largest) DenseCodec().DecodeInto(bytes, *this, scale);
  return max_bits;
}

int32_t FixedPointSink::FoldDenseBytesOnePass(std::span<const uint8_t> bytes, float scale,
                                              int32_t largest) {
  TRIB_CHECK_EQ(bytes.size(), target_.size() * sizeof(float), "dense bytes of the wrong size");
  TRIB_CHECK(scale >= 0.0f && scale <= 1.0f, "a dense fold's scale must be in [0, 1]");
  target_.MakeRoom();
  const uint64_t bound = target_.bound_;
  const double k = static_cast<double>(scale) * weight_ * kOne;
  int32_t max_bits = 0;
  const uint64_t magnitudes = FoldFixedPointBytes(target_.lane_.data(), bytes.data(),
                                                  target_.size(), k, largest, &max_bits);
  if (max_bits <= largest) {
    target_.bound_ += magnitudes + 1;
    return max_bits;
  }
  // Undone: the same terms negated (the lane went from v to v + t, |t| < 2^62 and |v| < 2^62,
  // and comes back to v), and the bound as it was.
  int32_t again = 0;
  (void)FoldFixedPointBytes(target_.lane_.data(), bytes.data(), target_.size(), -k, largest,
                            &again);
  target_.bound_ = bound;
  return max_bits;
}

int32_t FixedPointSink::LargestBitsFor(uint64_t weight) {
  const double w = static_cast<double>(std::max<uint64_t>(weight, 1));
  auto fits = [w](float x) { return static_cast<double>(x) * w < kMaxFixedPointTerm; };
  float x = static_cast<float>(kMaxFixedPointTerm / w);
  while (x > 0.0f && !fits(x)) x = std::nextafter(x, 0.0f);
  while (fits(std::nextafter(x, std::numeric_limits<float>::infinity())))
    x = std::nextafter(x, std::numeric_limits<float>::infinity());
  int32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  return bits;
}

void FixedPointSink::AddSparse(std::span<const uint32_t> index, std::span<const float> values,
                               float scale) {
  TRIB_CHECK_EQ(index.size(), values.size(), "sparse write with mismatched lengths");
  const double k = static_cast<double>(scale) * weight_ * kOne;
  target_.MakeRoom();
  int64_t* dst = target_.lane_.data();
  uint64_t magnitudes = 0;
  for (size_t i = 0; i < index.size(); ++i) {
    TRIB_DCHECK(index[i] < target_.size(), "sparse index out of range");
    const int64_t t = static_cast<int64_t>(static_cast<double>(values[i]) * k);
    dst[index[i]] += t;
    magnitudes |= static_cast<uint64_t>(t ^ (t >> 63));
  }
  target_.bound_ += magnitudes + 1;
}

}  // namespace tributary
