#include "compression/pipeline_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "compression/index_coding.h"
#include "compression/selection.h"
#include "compression/value_coding.h"

namespace tributary {
namespace {

std::vector<float> Wave(size_t n, float amp = 0.01f) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i)
    x[i] = amp * std::sin(0.37f * static_cast<float>(i) + 1.0f) * (1.0f + (i % 7) * 0.3f);
  return x;
}

std::vector<float> Decode(const Codec& c, std::span<const uint8_t> bytes, size_t n) {
  Result<UpdateStats> st = c.Validate(bytes, n);
  EXPECT_TRUE(st.ok()) << c.spec() << ": " << st.status();
  std::vector<float> out(n, 0.0f);
  if (!st.ok()) return out;
  BufferSink sink(out);
  c.DecodeInto(bytes, sink, 1.0f);
  return out;
}

size_t Ceil(size_t a, size_t b) { return (a + b - 1) / b; }

TEST(PipelineCodecTest, LosslessStagesRoundTripExactly) {
  const std::vector<float> x = Wave(10007);
  for (const char* spec : {"zstd", "zstd(level=19)", "topk(1.0,ef=0)", "topk(1.0,ef=0)+zstd"}) {
    auto c = *MakeCodec(spec);
    auto bytes = *c->Encode(x);
    EXPECT_EQ(Decode(*c, bytes, x.size()), x) << spec;
  }
  // zstd actually compresses a compressible update.
  std::vector<float> zeros(100000, 0.0f);
  zeros[5] = 1.0f;
  EXPECT_LT((*MakeCodec("zstd"))->Encode(zeros)->size(), 1000u);
}

TEST(PipelineCodecTest, IndexEncodingsRoundTripAndPickTheSmaller) {
  for (size_t stride : {1, 3, 100, 300, 5000}) {
    const size_t n = 20000;
    std::vector<uint32_t> idx;
    for (size_t i = 2; i < n; i += stride) idx.push_back(static_cast<uint32_t>(i));
    std::vector<uint8_t> out;
    const IndexMode mode = EncodeIndices(idx, n, &out);
    const size_t varint = VarintIndexBytes(idx);
    EXPECT_EQ(out.size(), kIndexHeaderBytes + std::min(varint, BitmapIndexBytes(n))) << stride;
    EXPECT_EQ(mode, varint <= BitmapIndexBytes(n) ? IndexMode::kVarint : IndexMode::kBitmap);
    ByteReader r(out);
    Result<IndexSection> s = ReadIndexSection(r, idx.size(), n);
    ASSERT_TRUE(s.ok()) << s.status();
    IndexCursor cur(*s);
    std::vector<uint32_t> back(idx.size() + 1);
    size_t got = 0;
    while (size_t g = cur.Next(back.data() + got, std::min<size_t>(7, back.size() - got))) got += g;
    back.resize(got);
    EXPECT_EQ(back, idx) << stride;
  }
}

TEST(PipelineCodecTest, ByteCountsMatchTheirFormulas) {
  const size_t n = 10001;
  const std::vector<float> x = Wave(n);
  const size_t scales = Ceil(n, 512);
  EXPECT_EQ((*MakeCodec("q8"))->Encode(x)->size(), 4 * scales + n);
  EXPECT_EQ((*MakeCodec("q4"))->Encode(x)->size(), 4 * scales + Ceil(n, 2));
  EXPECT_EQ((*MakeCodec("q2"))->Encode(x)->size(), 4 * scales + Ceil(n, 4));
  EXPECT_EQ((*MakeCodec("q1"))->Encode(x)->size(), 4 * scales + Ceil(n, 8));
  EXPECT_EQ((*MakeCodec("sign"))->Encode(x)->size(), 4 * scales + Ceil(n, 8));
  EXPECT_EQ((*MakeCodec("q8(chunk=64)"))->Encode(x)->size(), 4 * Ceil(n, 64) + n);
  // Top-k with known winners: every 100th value is large, so indices 0, 100, ... 9900 and each
  // varint gap (100) is one byte: 4 (count) + 5 (index header) + 100 + k values.
  std::vector<float> spikes(10000, 0.001f);
  for (size_t i = 0; i < spikes.size(); i += 100) spikes[i] = 1.0f + static_cast<float>(i);
  EXPECT_EQ((*MakeCodec("topk(k=100)"))->Encode(spikes)->size(), 4 + 5 + 100 + 100 * 4u);
  EXPECT_EQ((*MakeCodec("topk(0.01)+q8"))->Encode(spikes)->size(), 4 + 5 + 100 + (4 + 100u));
  EXPECT_EQ((*MakeCodec("topk(0.01)+sign"))->Encode(spikes)->size(), 4 + 5 + 100 + (4 + 13u));
  // Gaps of 200 need two-byte varints.
  std::vector<float> sparse_spikes(20000, 0.001f);
  for (size_t i = 0; i < sparse_spikes.size(); i += 200) sparse_spikes[i] = 5.0f;
  EXPECT_EQ((*MakeCodec("topk(k=100)"))->Encode(sparse_spikes)->size(), 4 + 5 + 1 + 99 * 2 + 400u);
  // Half the model: the bitmap (ceil(1000 / 8) = 125 bytes) is smaller than 500 varints.
  EXPECT_EQ((*MakeCodec("topk(0.5)"))->Encode(Wave(1000))->size(), 4 + 5 + 125 + 500 * 4u);
  EXPECT_EQ((*MakeCodec("randk(k=300)+q8"))->Encode(Wave(1000))->size(), 4 + 5 + 125 + (4 + 300u));
}

TEST(PipelineCodecTest, TopKPicksTheLargestMagnitudes) {
  std::vector<float> x = {0.1f, -5.0f, 0.0f, 3.0f, -3.0f, 0.2f, 0.0f, 4.0f};
  EXPECT_EQ(TopKIndices(x, 3), (std::vector<uint32_t>{1, 3, 7}));
  EXPECT_EQ(TopKIndices(x, 4), (std::vector<uint32_t>{1, 3, 4, 7}));          // tie kept by index
  EXPECT_EQ(TopKIndices(x, 100), (std::vector<uint32_t>{0, 1, 3, 4, 5, 7}));  // zeros never sent
  std::vector<float> flat(1000, 2.0f);
  std::vector<uint32_t> first = TopKIndices(flat, 10);
  EXPECT_EQ(first.size(), 10u);
  EXPECT_EQ(first.back(), 9u);
  // Against a sort on random data.
  std::vector<float> r = Wave(50000, 3.0f);
  for (size_t i = 0; i < r.size(); ++i) r[i] *= std::cos(static_cast<float>(i * i % 977));
  std::vector<uint32_t> top = TopKIndices(r, 500);
  std::vector<float> mags(r.size());
  for (size_t i = 0; i < r.size(); ++i) mags[i] = std::fabs(r[i]);
  std::vector<float> sorted = mags;
  std::nth_element(sorted.begin(), sorted.begin() + 499, sorted.end(), std::greater<>());
  const float kth = sorted[499];
  ASSERT_EQ(top.size(), 500u);
  for (uint32_t i : top) EXPECT_GE(mags[i], kth);
  EXPECT_TRUE(std::is_sorted(top.begin(), top.end()));
}

TEST(PipelineCodecTest, RandKIsUniformAndSeeded) {
  std::vector<uint32_t> a = RandKIndices(1000, 100, 7), b = RandKIndices(1000, 100, 7);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, RandKIndices(1000, 100, 8));
  EXPECT_EQ(a.size(), 100u);
  EXPECT_TRUE(std::adjacent_find(a.begin(), a.end(), std::greater_equal<>()) == a.end());
  std::vector<int> hits(100, 0);
  for (uint64_t s = 0; s < 2000; ++s)
    for (uint32_t i : RandKIndices(100, 10, s)) ++hits[i];
  // Each index is chosen with probability 0.1: 200 of 2000 draws, sd ~13.4.
  for (int h : hits) EXPECT_NEAR(h, 200, 70);
  EXPECT_EQ(RandKIndices(5, 5, 1), (std::vector<uint32_t>{0, 1, 2, 3, 4}));
}

// The mean of many decodes (different seeds) approaches the input: |mean - x| within 5 standard
// errors of the per-value bound, and the average error within 5 standard errors of the mean.
TEST(PipelineCodecTest, StochasticStagesAreUnbiased) {
  const size_t n = 1000, trials = 3000;
  const std::vector<float> x = Wave(n, 1.0f);
  for (const char* spec : {"q8", "q4", "q2", "q1", "randk(0.1)", "randk(0.1)+q8"}) {
    auto c = *MakeCodec(spec);
    std::vector<double> sum(n, 0.0);
    for (uint64_t t = 0; t < trials; ++t) {
      std::vector<float> d = Decode(*c, *c->Encode(x, nullptr, t), n);
      for (size_t i = 0; i < n; ++i) sum[i] += d[i];
    }
    // Per-value standard deviation bounds: quantization <= chunk max |x| (<= 2.8 here) times
    // the level spacing; random-k <= |x| * sqrt(n / k - 1) = 3 |x| (plus q8 noise).
    const bool randk = std::string_view(spec).starts_with("randk");
    double mean_err = 0.0;
    for (size_t i = 0; i < n; ++i) {
      const double mean = sum[i] / trials;
      const double sd =
          randk ? 3.1 * std::fabs(x[i]) + 0.1 : 2.8 * 2.0 / ((1 << (spec[1] - '0')) - 1);
      ASSERT_NEAR(mean, x[i], 5.0 * sd / std::sqrt(double(trials)) + 1e-6) << spec << " " << i;
      mean_err += mean - x[i];
    }
    EXPECT_NEAR(mean_err / n, 0.0, 5.0 * 3.1 * 2.8 / std::sqrt(double(trials * n))) << spec;
  }
}

TEST(PipelineCodecTest, SameSeedSameBytes) {
  const std::vector<float> x = Wave(5000);
  for (const char* spec : {"q4", "randk(0.05)+q2+zstd"}) {
    auto c = *MakeCodec(spec);
    EXPECT_EQ(*c->Encode(x, nullptr, 42), *c->Encode(x, nullptr, 42)) << spec;
    EXPECT_NE(*c->Encode(x, nullptr, 42), *c->Encode(x, nullptr, 43)) << spec;
  }
}

TEST(PipelineCodecTest, SignSendsScaledSigns) {
  std::vector<float> x(16);
  for (size_t i = 0; i < 16; ++i) x[i] = (i % 2 ? -1.0f : 1.0f) * static_cast<float>(i + 1);
  auto c = *MakeCodec("sign(chunk=8)");
  std::vector<float> d = Decode(*c, *c->Encode(x), 16);
  EXPECT_FLOAT_EQ(d[0], 4.5f);  // mean |x| of 1..8
  EXPECT_FLOAT_EQ(d[1], -4.5f);
  EXPECT_FLOAT_EQ(d[9], -12.5f);  // mean of 9..16
}

TEST(PipelineCodecTest, ErrorFeedbackKeepsWhatWasNotSent) {
  const size_t n = 4000;
  for (const char* spec :
       {"topk(0.05)", "topk(0.05)+q8", "topk(0.01)+q8+zstd", "sign(ef=1)", "topk(0.02)+sign"}) {
    auto c = *MakeCodec(spec);
    ASSERT_TRUE(c->uses_error_feedback()) << spec;
    CodecState state;
    std::vector<double> sent(n, 0.0), accumulated(n, 0.0);
    for (uint64_t round = 0; round < 6; ++round) {
      std::vector<float> delta = Wave(n, 0.01f * static_cast<float>(round + 1));
      for (size_t i = 0; i < n; ++i) delta[i] *= std::cos(static_cast<float>(round * 31 + i));
      std::vector<float> before = state.residual;
      if (before.empty()) before.assign(n, 0.0f);
      auto bytes = *c->Encode(delta, &state, round);
      EXPECT_EQ(state.spec, c->spec());
      ASSERT_EQ(state.residual.size(), n);
      std::vector<float> dec = Decode(*c, bytes, n);
      const bool exact = std::string_view(spec) == "topk(0.05)";
      for (size_t i = 0; i < n; ++i) {
        const float acc = delta[i] + before[i];
        if (exact)
          ASSERT_EQ(state.residual[i] + dec[i], acc) << spec << " " << i;
        else
          ASSERT_NEAR(state.residual[i] + dec[i], acc, 2e-7f * (1.0f + std::fabs(acc)))
              << spec << " " << i;
        sent[i] += dec[i];
        accumulated[i] += delta[i];
      }
    }
    // Over the rounds: everything sent plus the residual is everything accumulated.
    for (size_t i = 0; i < n; ++i)
      ASSERT_NEAR(sent[i] + state.residual[i], accumulated[i], 1e-5) << spec << " " << i;
  }
  // Without a state the same codec encodes the delta alone, and a residual of another size is an
  // error that leaves the state as it was.
  auto c = *MakeCodec("topk(0.1)");
  const std::vector<float> delta = Wave(100);
  EXPECT_EQ(*c->Encode(delta, nullptr, 0), *c->Encode(delta));
  CodecState wrong{"topk(0.1)", std::vector<float>(99, 1.0f)};
  Result<std::vector<uint8_t>> r = c->Encode(delta, &wrong, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("residual has 99 floats"), std::string::npos) << r.status();
  EXPECT_EQ(wrong.residual, std::vector<float>(99, 1.0f));
}

TEST(PipelineCodecTest, NonFiniteDeltaIsRefusedAndStateKept) {
  auto c = *MakeCodec("topk(0.1)+q8");
  CodecState state{"", std::vector<float>(10, 0.5f)};
  std::vector<float> delta(10, 1.0f);
  delta[3] = NAN;
  Result<std::vector<uint8_t>> r = c->Encode(delta, &state, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("index 3"), std::string::npos) << r.status();
  EXPECT_EQ(state.residual, std::vector<float>(10, 0.5f));
}

// The coordinator decodes into its fixed-point accumulator; that must equal a dense decode folded
// in, for every stage combination.
TEST(PipelineCodecTest, FixedPointDecodeEqualsDenseDecode) {
  const size_t n = 3001;
  const std::vector<float> x = Wave(n, 0.5f);
  for (const char* spec : {"dense", "q8", "q4", "q2", "q1", "sign", "zstd", "topk(0.01)",
                           "topk(k=1000)", "randk(0.01)", "topk(0.01)+q8", "topk(0.01)+q8+zstd",
                           "sign+zstd", "topk(0.5)+q4", "randk(0.2)+sign"}) {
    auto c = *MakeCodec(spec);
    auto bytes = *c->Encode(x, nullptr, 9);
    auto st = c->Validate(bytes, n);
    ASSERT_TRUE(st.ok()) << spec << ": " << st.status();
    FixedPointSum direct, folded;
    direct.Reset(n);
    folded.Reset(n);
    FixedPointSink d(direct);
    c->DecodeInto(bytes, d, 37.0f);
    std::vector<float> dense = Decode(*c, bytes, n);
    FixedPointSink f(folded);
    f.AddDense(0, dense, 37.0f);
    EXPECT_EQ(direct, folded) << spec;
    float mx = 0.0f;
    for (float v : dense) mx = std::max(mx, std::fabs(v));
    EXPECT_NEAR(st->max_abs, mx, 1e-6 * mx) << spec;  // Validate's bound is the real maximum
  }
}

TEST(PipelineCodecTest, QuantizationErrorIsBoundedByTheLevelSpacing) {
  const size_t n = 4096;
  const std::vector<float> x = Wave(n, 2.0f);
  for (int bits : {8, 4, 2, 1}) {
    auto c = *MakeCodec("q" + std::to_string(bits));
    std::vector<float> d = Decode(*c, *c->Encode(x), n);
    for (size_t chunk = 0; chunk < n; chunk += 512) {
      float mx = 0.0f;
      for (size_t i = chunk; i < chunk + 512; ++i) mx = std::max(mx, std::fabs(x[i]));
      const float step = 2.0f * mx / static_cast<float>((1 << bits) - 1);
      for (size_t i = chunk; i < chunk + 512; ++i)
        ASSERT_LE(std::fabs(d[i] - x[i]), step * 1.0001f) << bits << " " << i;
    }
  }
}

// Found by codec_fuzzer: a chunk whose largest magnitude is subnormal made the quantizer's inverse
// step infinite, and converting the infinite (or NaN) code to int was undefined behaviour (UBSan).
// Such a chunk now codes to finite values within its range (the level spacing of a subnormal scale
// is below what a float holds), and a chunk of huge values within one level spacing.
TEST(PipelineCodecTest, SubnormalAndHugeChunksCodeToFiniteValuesWithinTheirRange) {
  const float tiny = std::numeric_limits<float>::denorm_min();
  const float huge = 1e30f;  // the largest magnitude an update may hold
  const std::vector<std::vector<float>> inputs = {
      {tiny, -tiny, 0.0f, 3 * tiny, -7 * tiny},
      {0.0f, 0.0f, tiny, 0.0f, 0.0f},
      {huge, -huge, 0.0f, huge / 3, 1.0f},
  };
  for (int bits : {8, 4, 2, 1}) {
    auto c = *MakeCodec("q" + std::to_string(bits));
    for (const std::vector<float>& x : inputs) {
      std::vector<float> d = Decode(*c, *c->Encode(x), x.size());
      double mx = 0.0;
      for (float v : x) mx = std::max(mx, std::fabs(static_cast<double>(v)));
      const double bound =
          mx < std::numeric_limits<float>::min() ? 2.0 * mx : 2.0 * mx / ((1 << bits) - 1) * 1.0001;
      for (size_t i = 0; i < x.size(); ++i) {
        ASSERT_TRUE(std::isfinite(d[i])) << bits << " " << i;
        ASSERT_LE(std::fabs(static_cast<double>(d[i]) - x[i]), bound)
            << bits << " " << i << ": " << x[i] << " -> " << d[i];
      }
    }
  }
}

TEST(PipelineCodecTest, EmptyAndAllZeroUpdates) {
  for (const char* spec : {"q8", "topk(0.1)", "randk(0.1)+q1", "sign+zstd"}) {
    auto c = *MakeCodec(spec);
    std::vector<float> zeros(100, 0.0f);
    std::vector<float> d = Decode(*c, *c->Encode(zeros), 100);
    EXPECT_EQ(d, zeros) << spec;
    auto empty = c->Encode(std::vector<float>{});
    ASSERT_TRUE(empty.ok()) << spec;
    EXPECT_TRUE(c->Validate(*empty, 0).ok()) << spec;
  }
}

}  // namespace
}  // namespace tributary

namespace tributary {
namespace {

// Decoding any sub-range of a value section equals the same slice of a full decode (ragged starts
// and ends take the code-at-a-time path).
TEST(ValueCodingTest, SubRangesMatchTheFullDecode) {
  const std::vector<float> x = Wave(1000, 1.0f);
  for (const char* spec :
       {"q8(chunk=16)", "q4(chunk=16)", "q2(chunk=16)", "q1(chunk=16)", "sign(chunk=16)"}) {
    const ValueFormat f = ValueFormat::Of(*ParseCodecSpec(spec));
    std::vector<uint8_t> section;
    EncodeValues(f, x, 3, &section);
    std::vector<float> full(x.size());
    DecodeValues(f, section, x.size(), 0, x.size(), full.data());
    for (size_t first : {0, 1, 3, 7, 8, 13, 31, 500}) {
      for (size_t count : {1, 5, 8, 17, 64, 333}) {
        std::vector<float> part(count);
        DecodeValues(f, section, x.size(), first, count, part.data());
        for (size_t j = 0; j < count; ++j)
          ASSERT_EQ(part[j], full[first + j]) << spec << " " << first << "+" << j;
      }
    }
  }
}

}  // namespace
}  // namespace tributary
