#include "compression/value_coding.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/simd.h"

namespace tributary {
namespace {

// A 32-bit integer hash (a bijection with good avalanche), cheap enough to vectorize: the
// stochastic rounding of value i uses Hash(i ^ key), so encoding is deterministic for a seed and
// needs no sequential generator state.
inline uint32_t Hash(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

uint32_t KeyOf(uint64_t seed) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<uint32_t>(z ^ (z >> 31));
}

float LoadF32(const uint8_t* p) {
  float f;
  std::memcpy(&f, p, 4);
  return f;
}

// Quantizes x[0, len) (one chunk starting at value `first`) to codes in [0, levels].
TRIB_SIMD_CLONES void QuantizeChunk(const float* __restrict x, size_t len, uint32_t first,
                                    uint32_t key, float scale, uint32_t levels,
                                    uint8_t* __restrict codes) {
  const float inv = scale > 0.0f ? static_cast<float>(levels) / (2.0f * scale) : 0.0f;
  const float half = 0.5f * static_cast<float>(levels);
  const float top = static_cast<float>(levels);
  for (size_t j = 0; j < len; ++j) {
    const uint32_t h = Hash((first + static_cast<uint32_t>(j)) * 0x9e3779b9U ^ key);
    const float u = static_cast<float>(h >> 8) * 0x1.0p-24f;
    // Clamped in float before the conversion: with a subnormal scale, inv is infinite and t may
    // be infinite or NaN, whose conversion to int is undefined. NaN compares false: it becomes 0.
    float t = x[j] * inv + half + u;
    t = t > 0.0f ? t : 0.0f;
    t = t < top ? t : top;
    codes[j] = static_cast<uint8_t>(static_cast<int>(t));  // t >= 0, so truncation is floor
  }
}

TRIB_SIMD_CLONES float MaxAbs(const float* x, size_t len) {
  float m = 0.0f;
  for (size_t j = 0; j < len; ++j) {
    const float a = std::fabs(x[j]);
    m = m > a ? m : a;
  }
  return m;
}

TRIB_SIMD_CLONES float MeanAbs(const float* x, size_t len) {
  float acc[8] = {};
  size_t j = 0;
  for (; j + 8 <= len; j += 8)
    for (int l = 0; l < 8; ++l) acc[l] += std::fabs(x[j + l]);
  float s = 0.0f;
  for (; j < len; ++j) s += std::fabs(x[j]);
  for (int l = 0; l < 8; ++l) s += acc[l];
  return len == 0 ? 0.0f : s / static_cast<float>(len);
}

// Packs codes of `bits` bits (byte-aligned start) into dst.
void Pack(const uint8_t* codes, size_t len, int bits, uint8_t* dst) {
  if (bits == 8) {
    std::memcpy(dst, codes, len);
    return;
  }
  const size_t per = 8 / bits;
  const size_t full = len / per;
  for (size_t b = 0; b < full; ++b) {
    uint8_t v = 0;
    for (size_t l = 0; l < per; ++l) v |= static_cast<uint8_t>(codes[b * per + l] << (l * bits));
    dst[b] = v;
  }
  if (full * per < len) {
    uint8_t v = 0;
    for (size_t l = 0; full * per + l < len; ++l)
      v |= static_cast<uint8_t>(codes[full * per + l] << (l * bits));
    dst[full] = v;
  }
}

// Codes of B bits at value positions [p, p + len) -> q * a + b. Whole bytes go through an unrolled
// loop the compiler vectorizes; a ragged start or end goes one code at a time. Inlined into the
// dispatched DecodeBits below, so each of its copies vectorizes it for its own target.
template <int B>
[[gnu::always_inline]] inline void DecodeQuantized(const uint8_t* codes, size_t p, size_t len,
                                                   float a, float b, float* out) {
  if constexpr (B == 8) {
    for (size_t j = 0; j < len; ++j) out[j] = static_cast<float>(codes[p + j]) * a + b;
  } else {
    constexpr uint32_t kMask = (1u << B) - 1;
    constexpr size_t kPer = 8 / B;
    size_t j = 0;
    if (p % kPer == 0) {
      const uint8_t* c = codes + p / kPer;
      for (; j + kPer <= len; j += kPer) {
        const uint32_t byte = c[j / kPer];
        for (size_t l = 0; l < kPer; ++l)
          out[j + l] = static_cast<float>((byte >> (l * B)) & kMask) * a + b;
      }
    }
    for (; j < len; ++j) {
      const size_t bit = (p + j) * B;
      const uint32_t q = (codes[bit >> 3] >> (bit & 7)) & kMask;
      out[j] = static_cast<float>(q) * a + b;
    }
  }
}

TRIB_SIMD_CLONES void DecodeBits(int bits, const uint8_t* codes, size_t p, size_t len, float a,
                                 float b, float* out) {
  switch (bits) {
    case 8:
      DecodeQuantized<8>(codes, p, len, a, b, out);
      break;
    case 4:
      DecodeQuantized<4>(codes, p, len, a, b, out);
      break;
    case 2:
      DecodeQuantized<2>(codes, p, len, a, b, out);
      break;
    default:
      DecodeQuantized<1>(codes, p, len, a, b, out);
      break;
  }
}

// Sign bits at positions [p, p + len) -> -s or +s, by setting the float's sign bit.
TRIB_SIMD_CLONES void DecodeSigns(const uint8_t* codes, size_t p, size_t len, float s, float* out) {
  uint32_t sbits;
  std::memcpy(&sbits, &s, 4);
  size_t j = 0;
  if (p % 8 == 0) {
    for (; j + 8 <= len; j += 8) {
      const uint32_t byte = codes[(p + j) >> 3];
      for (uint32_t l = 0; l < 8; ++l) {
        const uint32_t v = sbits | (((byte >> l) & 1u) << 31);
        std::memcpy(out + j + l, &v, 4);
      }
    }
  }
  for (; j < len; ++j) out[j] = ((codes[(p + j) >> 3] >> ((p + j) & 7)) & 1) ? -s : s;
}

}  // namespace

size_t ValueFormat::SectionBytes(size_t m) const {
  switch (coding) {
    case ValueCoding::kF32:
      return m * 4;
    case ValueCoding::kQuantized:
      return ScaleCount(m) * 4 + (m * static_cast<size_t>(bits) + 7) / 8;
    case ValueCoding::kSign:
      return ScaleCount(m) * 4 + (m + 7) / 8;
  }
  return 0;
}

void EncodeValues(const ValueFormat& f, std::span<const float> x, uint64_t seed,
                  std::vector<uint8_t>* out) {
  const size_t m = x.size();
  const size_t at = out->size();
  out->resize(at + f.SectionBytes(m));
  uint8_t* dst = out->data() + at;
  if (f.coding == ValueCoding::kF32) {
    if (m) std::memcpy(dst, x.data(), m * 4);
    return;
  }
  const size_t scales = f.ScaleCount(m);
  uint8_t* code_dst = dst + scales * 4;
  if (f.coding == ValueCoding::kSign) {
    for (size_t c = 0; c < scales; ++c) {
      const size_t begin = c * f.chunk, len = std::min<size_t>(f.chunk, m - begin);
      const float scale = MeanAbs(x.data() + begin, len);
      std::memcpy(dst + c * 4, &scale, 4);
    }
    for (size_t i = 0; i < m; ++i)
      code_dst[i >> 3] |= static_cast<uint8_t>((x[i] < 0.0f ? 1u : 0u) << (i & 7));
    return;
  }
  const uint32_t levels = (1u << f.bits) - 1;
  const uint32_t key = KeyOf(seed);
  std::vector<uint8_t> codes(f.chunk);
  for (size_t c = 0; c < scales; ++c) {
    const size_t begin = c * f.chunk, len = std::min<size_t>(f.chunk, m - begin);
    const float scale = MaxAbs(x.data() + begin, len);
    std::memcpy(dst + c * 4, &scale, 4);
    QuantizeChunk(x.data() + begin, len, static_cast<uint32_t>(begin), key, scale, levels,
                  codes.data());
    Pack(codes.data(), len, f.bits, code_dst + begin * static_cast<size_t>(f.bits) / 8);
  }
}

Status ValidateValues(const ValueFormat& f, std::span<const uint8_t> section, size_t m,
                      double* max_abs) {
  const size_t want = f.SectionBytes(m);
  if (section.size() != want)
    return Status::Corruption("value section has " + std::to_string(section.size()) + " bytes; " +
                              std::to_string(m) + " values need " + std::to_string(want));
  *max_abs = 0.0;
  if (f.coding == ValueCoding::kF32) {
    float block[1024];
    for (size_t i = 0; i < m; i += 1024) {
      const size_t n = std::min<size_t>(1024, m - i);
      std::memcpy(block, section.data() + i * 4, n * 4);
      float mx = 0.0f;
      bool finite = true;
      for (size_t j = 0; j < n; ++j) {
        finite &= std::isfinite(block[j]);
        const float a = std::fabs(block[j]);
        mx = mx > a ? mx : a;
      }
      if (!finite)
        for (size_t j = 0; j < n; ++j)
          if (!std::isfinite(block[j]))
            return Status::Corruption("value " + std::to_string(i + j) + " is non-finite (" +
                                      std::to_string(block[j]) + ")");
      *max_abs = std::max<double>(*max_abs, mx);
    }
    return Status::Ok();
  }
  const size_t scales = f.ScaleCount(m);
  const uint32_t levels = f.coding == ValueCoding::kSign ? 1 : (1u << f.bits) - 1;
  for (size_t c = 0; c < scales; ++c) {
    const float s = LoadF32(section.data() + c * 4);
    if (!std::isfinite(s))
      return Status::Corruption("scale of chunk " + std::to_string(c) + " is non-finite (" +
                                std::to_string(s) + ")");
    if (!(s >= 0.0f))
      return Status::Corruption("scale of chunk " + std::to_string(c) + " is negative (" +
                                std::to_string(s) + ")");
    double mx = s;
    if (f.coding == ValueCoding::kQuantized) {
      // The decode is monotone in the code, so its extremes are codes 0 and `levels`.
      const float a = 2.0f * s / static_cast<float>(levels), b = -s;
      mx = std::max(std::fabs(static_cast<double>(b)),
                    std::fabs(static_cast<double>(static_cast<float>(levels) * a + b)));
    }
    if (!std::isfinite(mx))
      return Status::Corruption("scale of chunk " + std::to_string(c) + " (" + std::to_string(s) +
                                ") is too large to decode");
    *max_abs = std::max(*max_abs, mx);
  }
  const size_t code_bits = m * static_cast<size_t>(f.coding == ValueCoding::kSign ? 1 : f.bits);
  if (code_bits % 8 != 0) {
    const uint8_t last = section.back();
    if (last >> (code_bits % 8))
      return Status::Corruption("padding bits after the last of " + std::to_string(m) +
                                " codes are not zero (bits that do not fit)");
  }
  return Status::Ok();
}

void DecodeValues(const ValueFormat& f, std::span<const uint8_t> section, size_t m, size_t first,
                  size_t count, float* out) {
  TRIB_DCHECK(first + count <= m, "value range out of the section");
  if (f.coding == ValueCoding::kF32) {
    std::memcpy(out, section.data() + first * 4, count * 4);
    return;
  }
  const uint8_t* codes = section.data() + f.ScaleCount(m) * 4;
  size_t p = first;
  const size_t end = first + count;
  while (p < end) {
    const size_t c = p / f.chunk;
    const size_t len = std::min<size_t>(end, (c + 1) * f.chunk) - p;
    const float s = LoadF32(section.data() + c * 4);
    float* o = out + (p - first);
    if (f.coding == ValueCoding::kSign) {
      DecodeSigns(codes, p, len, s, o);
    } else {
      const float a = 2.0f * s / static_cast<float>((1u << f.bits) - 1), b = -s;
      DecodeBits(f.bits, codes, p, len, a, b, o);
    }
    p += len;
  }
}

}  // namespace tributary
