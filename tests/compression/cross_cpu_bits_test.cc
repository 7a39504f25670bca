// The codecs and the fixed-point fold give the same bits on every CPU: the x86-64 baseline, its
// AVX2 and AVX-512 clones (core/simd.h) and aarch64. The expected hashes below were computed once;
// the same binary runs natively (an AVX-512 or AVX2 clone), under `qemu-x86_64 -cpu Westmere` (the
// baseline copy; tests/integration/old_cpu_test.sh) and cross-built for aarch64 under qemu-user
// (scripts/test-aarch64), so a clone that rounds differently fails here on one of them. A codec
// change that alters its encoding on purpose updates these values (and the wire format's docs).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "compression/codec.h"
#include "compression/update_sink.h"
#include "core/hash.h"

namespace tributary {
namespace {

// A delta made with integer arithmetic and exact float operations only (no libm), so it is the
// same on every platform: values in (-5e-3, 5e-3), a few larger ones, and some exact zeros.
std::vector<float> Delta(size_t n) {
  std::vector<float> d(n);
  uint32_t x = 12345;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    const float u = static_cast<float>(x >> 8) * 0x1.0p-24f;  // [0, 1), exact
    d[i] = (u - 0.5f) * 0.01f;
    if (i % 997 == 0) d[i] *= 64.0f;
    if (i % 101 == 0) d[i] = 0.0f;
  }
  return d;
}

template <typename T>
uint64_t Hash(const std::vector<T>& v) {
  Fnv1a64 h;
  h.Add(v.data(), v.size() * sizeof(T));
  return h.value();
}

struct Expected {
  const char* spec;
  uint64_t encoded;  // the encoded bytes
  uint64_t decoded;  // the floats of a BufferSink decode, scale 0.37
  uint64_t folded;   // the int64s of a FixedPointSink fold, scale 0.37
};

TEST(CrossCpuBitsTest, EncodingDecodingAndFoldingGiveTheSameBitsOnEveryCpu) {
  const std::vector<Expected> expected = {
      {"dense", 0x0074b3685cf8d843ull, 0x96dea78bc5028d2bull, 0x059e2a03885503d7ull},
      {"q8", 0xefe0248fed38c002ull, 0xb5b79b0dc39ce778ull, 0x6fa1e19ccc241c3bull},
      {"q4", 0x13006309c59f74b8ull, 0x910284ac1532f81bull, 0x795b4766927b89ffull},
      {"q1", 0x18c33de0fdd7289full, 0xd46f59d16bb85cf8ull, 0x5332c78111a35f1full},
      {"sign", 0xa9b4b9beda9533f2ull, 0x992b701a04fb0416ull, 0xb75944e0590d36faull},
      {"topk(0.01)+q8", 0x35d023668d81ba5eull, 0x05c9d5774e38ba6aull, 0x1c038ff3fc513234ull},
      {"randk(0.1)+q4", 0xdb59ae1ea4259e83ull, 0x8072940be6554763ull, 0x7c8354209b7f34d7ull},
  };
  const size_t n = 100'003;  // not a multiple of any vector width or chunk
  const std::vector<float> delta = Delta(n);
  for (const Expected& e : expected) {
    SCOPED_TRACE(e.spec);
    auto codec = MakeCodec(e.spec);
    ASSERT_TRUE(codec.ok()) << codec.status();
    CodecState state;
    Result<std::vector<uint8_t>> bytes = (*codec)->Encode(delta, &state, /*seed=*/42);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    ASSERT_TRUE((*codec)->Validate(*bytes, n).ok());
    std::vector<float> decoded(n, 0.25f);
    BufferSink buffer(decoded);
    (*codec)->DecodeInto(*bytes, buffer, 0.37f);
    FixedPointSum sum;
    sum.Assign(std::vector<FixedPoint>(n, int64_t{1} << 20));
    FixedPointSink fixed(sum);
    (*codec)->DecodeInto(*bytes, fixed, 0.37f);
    // Hashed as int64s, the form the table was recorded in (every value fits).
    std::vector<int64_t> folded(n);
    for (size_t i = 0; i < n; ++i) folded[i] = static_cast<int64_t>(sum.At(i));
    const uint64_t got[3] = {Hash(*bytes), Hash(decoded), Hash(folded)};
    // Printed in the table's form, for a deliberate format change.
    std::printf("      {\"%s\", 0x%016llxull, 0x%016llxull, 0x%016llxull},\n", e.spec,
                static_cast<unsigned long long>(got[0]), static_cast<unsigned long long>(got[1]),
                static_cast<unsigned long long>(got[2]));
    EXPECT_EQ(got[0], e.encoded) << "encoded bytes";
    EXPECT_EQ(got[1], e.decoded) << "decoded floats";
    EXPECT_EQ(got[2], e.folded) << "fixed-point fold";
  }
}

}  // namespace
}  // namespace tributary
