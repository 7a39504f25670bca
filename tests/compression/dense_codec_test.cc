#include "compression/dense_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace tributary {
namespace {

TEST(DenseCodecTest, RoundTripsThroughASink) {
  auto codec = *MakeCodec("dense");
  std::vector<float> delta(10000);
  for (size_t i = 0; i < delta.size(); ++i) delta[i] = std::sin(static_cast<float>(i)) * 0.01f;
  auto bytes = *codec->Encode(delta);
  EXPECT_EQ(bytes.size(), delta.size() * 4);
  auto st = codec->Validate(bytes, delta.size());
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->values, delta.size());
  EXPECT_NEAR(st->max_abs, 0.01, 1e-6);
  std::vector<float> out(delta.size(), 1.0f);
  BufferSink sink(out);
  codec->DecodeInto(bytes, sink, 2.0f);
  for (size_t i = 0; i < delta.size(); ++i) ASSERT_EQ(out[i], 1.0f + 2.0f * delta[i]);
}

TEST(DenseCodecTest, RejectsWrongSizeAndNonFinite) {
  auto codec = *MakeCodec("dense");
  std::vector<float> delta(5000, 0.5f);
  auto bytes = *codec->Encode(delta);
  auto wrong = codec->Validate(bytes, 5001);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("needs 20004"), std::string::npos) << wrong.status();
  std::span<const uint8_t> truncated(bytes.data(), bytes.size() - 3);
  EXPECT_EQ(codec->Validate(truncated, 5000).status().code(), StatusCode::kCorruption);
  for (float bad :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    delta[4321] = bad;
    auto r = codec->Validate(*codec->Encode(delta), 5000);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("index 4321"), std::string::npos) << r.status();
  }
  EXPECT_FALSE(MakeCodec("topk(0.5)+lz4").ok());
}

// FoldDenseBytes: one pass over a dense update's bytes (validation and fold) gives bitwise the
// sum of DecodeInto, at any alignment of the bytes and any scale in [0, 1]; an update with one bad
// value anywhere (NaN, infinity, a value at CheckUpdate's bound) reports it and leaves the sum
// bitwise as it was, also once it has carried into its wide lane.
void CheckFoldDenseBytes(int32_t (FixedPointSink::*fold)(std::span<const uint8_t>, float, int32_t));

TEST(FixedPointSinkTest, FoldDenseBytesIsTheTwoPassFoldInOnePassAndUndoesABadUpdateExactly) {
  // Both ways FoldDenseBytes may take on a CPU (one pass; validation then fold), and its choice.
  using Fold = int32_t (FixedPointSink::*)(std::span<const uint8_t>, float, int32_t);
  for (Fold fold : {&FixedPointSink::FoldDenseBytesOnePass, &FixedPointSink::FoldDenseBytesTwoPass,
                    &FixedPointSink::FoldDenseBytes}) {
    SCOPED_TRACE(fold == &FixedPointSink::FoldDenseBytesOnePass   ? "one pass"
                 : fold == &FixedPointSink::FoldDenseBytesTwoPass ? "two passes"
                                                                  : "this CPU's choice");
    CheckFoldDenseBytes(fold);
  }
}

void CheckFoldDenseBytes(int32_t (FixedPointSink::*fold)(std::span<const uint8_t>, float,
                                                         int32_t)) {
  auto codec = *MakeCodec("dense");
  const size_t n = 10007;  // not a multiple of any vector width
  const uint64_t weight = 600;
  const int32_t largest = FixedPointSink::LargestBitsFor(weight);
  std::vector<FixedPointSum> two(2), one(2);
  for (auto* sums : {&two, &one})
    for (FixedPointSum& s : *sums) s.Reset(n);
  for (int u = 0; u < 5; ++u) {
    std::vector<float> delta(n);
    for (size_t i = 0; i < n; ++i)
      delta[i] = std::sin(static_cast<float>(i * (u + 1))) * (u == 3 ? 1e5f : 0.01f);
    const std::vector<uint8_t> encoded = *codec->Encode(delta);
    for (size_t offset : {size_t{0}, size_t{1}, size_t{3}}) {  // the bytes at any alignment
      SCOPED_TRACE(offset);
      std::vector<uint8_t> buffer(offset + encoded.size());
      std::copy(encoded.begin(), encoded.end(), buffer.begin() + static_cast<ptrdiff_t>(offset));
      const std::span<const uint8_t> bytes(buffer.data() + offset, encoded.size());
      const float scale = u % 2 == 0 ? 1.0f : 0.37f;
      FixedPointSum a = two[0], b = one[0];
      FixedPointSink ta(a, weight), tb(b, weight);
      codec->DecodeInto(bytes, ta, scale);
      const int32_t got = (tb.*fold)(bytes, scale, largest);
      ASSERT_LE(got, largest);
      ASSERT_TRUE(a == b) << "update " << u;
      int32_t want;
      const float max_abs = static_cast<float>(codec->Validate(bytes, n)->max_abs);
      std::memcpy(&want, &max_abs, sizeof(want));
      EXPECT_EQ(got, want) << "the largest magnitude, as Validate finds it";
      if (offset == 3) {
        two[0] = a;
        one[0] = b;
      }
    }
  }
  // Bad values at the start, the middle and the end: reported, and the sum untouched.
  const float kBad[] = {std::numeric_limits<float>::quiet_NaN(),
                        -std::numeric_limits<float>::infinity(),
                        static_cast<float>(FixedPointSink::kMaxFixedPointTerm / weight)};
  // Also on a sum that has carried into its wide lane (large terms: 1e6 * 600 * 2^32 ~ 2^61).
  FixedPointSum wide = one[0];
  {
    const std::vector<uint8_t> big = *codec->Encode(std::vector<float>(n, 1e6f));
    FixedPointSink w(wide, weight);
    for (int k = 0; k < 4; ++k) ASSERT_LE((w.*fold)(big, 1.0f, largest), largest);
    ASSERT_TRUE(wide.wide());
  }
  for (const FixedPointSum* base : {&one[0], &wide}) {
    for (float bad : kBad) {
      for (size_t at : {size_t{0}, n / 2, n - 1}) {
        SCOPED_TRACE(at);
        std::vector<float> delta(n, 0.25f);
        delta[at] = bad;
        const std::vector<uint8_t> bytes = *codec->Encode(delta);
        FixedPointSum before = *base, sum = *base;
        FixedPointSink sink(sum, weight);
        EXPECT_GT((sink.*fold)(bytes, 1.0f, largest), largest) << bad;
        EXPECT_TRUE(sum == before) << bad << " at " << at;
        // And the sum goes on folding as before: the next good update lands where it would have.
        std::vector<float> good(n, -0.5f);
        const std::vector<uint8_t> g = *codec->Encode(good);
        FixedPointSum expect = before;
        FixedPointSink es(expect, weight);
        codec->DecodeInto(g, es, 1.0f);
        ASSERT_LE((sink.*fold)(g, 1.0f, largest), largest);
        EXPECT_TRUE(sum == expect);
      }
    }
  }
  // The bound is CheckUpdate's: the largest x with x * weight < 2^30.
  float edge;
  std::memcpy(&edge, &largest, sizeof(edge));
  EXPECT_LT(static_cast<double>(edge) * weight, FixedPointSink::kMaxFixedPointTerm);
  EXPECT_GE(static_cast<double>(std::nextafter(edge, 1e30f)) * weight,
            FixedPointSink::kMaxFixedPointTerm);
}

TEST(FixedPointSinkTest, OrderIndependentAndAccurate) {
  const size_t n = 1000;
  std::vector<std::vector<float>> updates(7, std::vector<float>(n));
  for (size_t u = 0; u < updates.size(); ++u)
    for (size_t i = 0; i < n; ++i)
      updates[u][i] = std::sin(0.37f * (i + 1) * (u + 1)) * std::pow(10.0f, -float(u % 4));
  const float weights[] = {600, 13, 1, 2500, 77, 9, 310};
  auto run = [&](std::vector<size_t> order) {
    FixedPointSum acc;
    acc.Reset(n);
    FixedPointSink sink(acc);
    for (size_t u : order) sink.AddDense(0, updates[u], weights[u]);
    return acc;
  };
  auto a = run({0, 1, 2, 3, 4, 5, 6});
  auto b = run({6, 3, 5, 0, 2, 4, 1});
  EXPECT_TRUE(a == b);  // bitwise identical whatever the order
  for (size_t i = 0; i < n; ++i) {
    double ref = 0;
    for (size_t u = 0; u < updates.size(); ++u) ref += double(weights[u]) * updates[u][i];
    ASSERT_NEAR(static_cast<double>(a.At(i)) / FixedPointSink::kOne, ref, 1e-8 * updates.size());
  }
  // The sparse path folds the same way.
  FixedPointSum sparse, dense;
  sparse.Reset(n);
  dense.Reset(n);
  FixedPointSink ss(sparse), ds(dense);
  std::vector<uint32_t> idx = {3, 999, 0};
  std::vector<float> vals = {0.25f, -1.5f, 1e-3f};
  ss.AddSparse(idx, vals, 4.0f);
  std::vector<float> full(n, 0.0f);
  full[3] = 0.25f, full[999] = -1.5f, full[0] = 1e-3f;
  ds.AddDense(0, full, 4.0f);
  EXPECT_TRUE(sparse == dense);
}

}  // namespace
}  // namespace tributary
