#include "compression/dense_codec.h"

#include <gtest/gtest.h>

#include <cmath>
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
