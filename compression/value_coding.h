// The value section of a pipeline payload: m values as float32, QSGD-style stochastic quantization
// with one float scale per chunk, or signs with one scale per chunk.
//
//   f32:   m * 4 bytes, little-endian float32.
//   qB:    S = ceil(m / chunk) float32 scales (scale = max |x| of the chunk), then ceil(m * B / 8)
//          bytes of B-bit codes, packed from the low bits of each byte up. Code q in [0, 2^B - 1]
//          decodes to scale * (2q / (2^B - 1) - 1), computed as q * a + b with a = 2 * scale /
//          (2^B - 1) and b = -scale; the encoder picks the two codes around x at random with the
//          probabilities that make the decode unbiased (E[decode] = x).
//   sign:  S float32 scales (scale = mean |x| of the chunk), then ceil(m / 8) bytes, one bit per
//          value (1 = negative), decoding to -scale or +scale.
// Chunks are a multiple of 8 values, so each chunk's codes start on a byte boundary. Padding bits
// after the last code must be zero.
//
// All functions are pure and thread-safe. Decode* require a section that passed ValidateValues.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "compression/codec_spec.h"
#include "tributary/status.h"

namespace tributary {

struct ValueFormat {
  ValueCoding coding = ValueCoding::kF32;
  int bits = 32;
  uint32_t chunk = 512;

  static ValueFormat Of(const PipelineSpec& p) { return {p.values, p.bits, p.chunk}; }
  // Exact size of the section for m values.
  size_t SectionBytes(size_t m) const;
  size_t ScaleCount(size_t m) const { return (m + chunk - 1) / chunk; }
};

// Appends the section for `x` to `out`. `seed` drives the stochastic rounding (same seed, same
// bytes). x must be finite.
void EncodeValues(const ValueFormat& f, std::span<const float> x, uint64_t seed,
                  std::vector<uint8_t>* out);

// Checks a section of exactly f.SectionBytes(m) bytes: finite non-negative scales (finite values
// for f32), zero padding bits. Sets *max_abs to the largest |value| it decodes to. Corruption
// naming the problem otherwise.
Status ValidateValues(const ValueFormat& f, std::span<const uint8_t> section, size_t m,
                      double* max_abs);

// Decodes values [first, first + count) of a validated section of m values into out[0, count).
void DecodeValues(const ValueFormat& f, std::span<const uint8_t> section, size_t m, size_t first,
                  size_t count, float* out);

}  // namespace tributary
