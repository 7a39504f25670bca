// Each way a malformed update is rejected, with the message naming the problem. The same inputs
// seed the codec fuzz target (tests/fuzz/codec_make_corpus.cc).
#include <gtest/gtest.h>
#include <zstd.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "compression/byte_io.h"
#include "compression/codec.h"
#include "compression/codec_state.h"
#include "compression/zstd_frame.h"

namespace tributary {
namespace {

using Bytes = std::vector<uint8_t>;

std::string Rejection(std::string_view spec, const Bytes& bytes, size_t n) {
  auto c = *MakeCodec(spec);
  Result<UpdateStats> st = c->Validate(bytes, n);
  EXPECT_FALSE(st.ok()) << spec << " accepted a bad payload";
  if (st.ok()) return "";
  EXPECT_EQ(st.status().code(), StatusCode::kCorruption);
  return st.status().message();
}

// A sparse payload: count, varint index section from raw varints, then f32 values.
Bytes Sparse(uint32_t count, std::vector<uint32_t> varints, size_t values, int extra = 0) {
  Bytes out, idx;
  ByteWriter iw(&idx);
  for (uint32_t v : varints) iw.Varint(v);
  ByteWriter w(&out);
  w.U32(count);
  w.U8(0);
  w.U32(static_cast<uint32_t>(idx.size()));
  w.Raw(idx.data(), idx.size());
  for (size_t i = 0; i < values; ++i) w.F32(0.5f);
  for (int i = 0; i < extra; ++i) w.U8(0);
  return out;
}

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

TEST(CodecValidationTest, AValidSparsePayloadPasses) {
  auto c = *MakeCodec("topk(k=3)");
  Result<UpdateStats> st = c->Validate(Sparse(3, {5, 10, 20}, 3), 100);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->values, 3u);
  EXPECT_EQ(st->max_abs, 0.5);
}

TEST(CodecValidationTest, IndexOutOfRange) {
  EXPECT_HAS(Rejection("topk(k=3)", Sparse(3, {5, 10, 200}, 3), 100),
             "index 2 is 215, out of range for a model of 100 floats");
  EXPECT_HAS(Rejection("topk(k=3)", Sparse(1, {100}, 1), 100), "out of range");
  // A bitmap with a bit past the model.
  Bytes b;
  ByteWriter w(&b);
  w.U32(1), w.U8(1), w.U32(2), w.U8(0), w.U8(0x10), w.F32(1.0f);  // bit 12 of a 12-float model
  EXPECT_HAS(Rejection("topk(0.5)", b, 12), "bits past the model's 12 floats");
}

TEST(CodecValidationTest, NonIncreasingIndices) {
  EXPECT_HAS(Rejection("topk(k=3)", Sparse(3, {5, 0, 1}, 3), 100),
             "index 1 is not greater than the one before");
}

TEST(CodecValidationTest, CountsThatDoNotMatch) {
  EXPECT_HAS(Rejection("topk(k=3)", Sparse(4, {1, 1, 1, 1}, 4), 100), "count 4 exceeds the k of 3");
  EXPECT_HAS(Rejection("randk(k=3)", Sparse(2, {1, 1}, 2), 100),
             "count 2 does not match the k of 3");
  EXPECT_HAS(Rejection("topk(k=3)", Sparse(2, {1, 1, 1}, 2), 100),
             "bytes left after its 2 indices");
  EXPECT_HAS(Rejection("topk(k=3)", Sparse(3, {1, 1}, 3), 100), "varint truncated");
  Bytes b;  // a bitmap with 2 bits set and a count of 3
  ByteWriter w(&b);
  w.U32(3), w.U8(1), w.U32(2), w.U8(0x03), w.U8(0);
  for (int i = 0; i < 3; ++i) w.F32(1.0f);
  EXPECT_HAS(Rejection("topk(0.5)", b, 16), "holds 2 indices, the payload's count is 3");
  Bytes short_map;
  ByteWriter sw(&short_map);
  sw.U32(1), sw.U8(1), sw.U32(1), sw.U8(0x01), sw.F32(1.0f);
  EXPECT_HAS(Rejection("topk(0.5)", short_map, 16), "bitmap has 1 bytes");
  Bytes unknown_mode = Sparse(1, {1}, 1);
  unknown_mode[4] = 7;
  EXPECT_HAS(Rejection("topk(k=3)", unknown_mode, 100), "unknown index encoding 7");
}

TEST(CodecValidationTest, TruncatedPayloads) {
  const std::vector<float> x(1000, 0.25f);
  for (const char* spec : {"q8", "q4", "sign", "topk(0.1)", "topk(0.1)+q8", "randk(0.1)+q1"}) {
    auto c = *MakeCodec(spec);
    Bytes full = *c->Encode(x, nullptr, 1);
    ASSERT_TRUE(c->Validate(full, 1000).ok()) << spec;
    for (size_t cut : {size_t{1}, size_t{4}, full.size() / 2, full.size() - 1, full.size()}) {
      Bytes t(full.begin(), full.end() - static_cast<std::ptrdiff_t>(cut));
      EXPECT_FALSE(c->Validate(t, 1000).ok()) << spec << " cut " << cut;
    }
  }
  EXPECT_HAS(Rejection("q8", Bytes(100, 0), 1000), "value section has 100 bytes");
  EXPECT_HAS(Rejection("topk(k=3)", Sparse(3, {1, 1, 1}, 2), 100), "truncated payload");
  EXPECT_HAS(Rejection("topk(k=3)", Bytes{3, 0}, 100), "no value count");
  EXPECT_HAS(Rejection("topk(k=3)", Bytes{3, 0, 0, 0, 0}, 100), "index section header is cut off");
  Bytes lying = Sparse(1, {1}, 1);
  lying[5] = 200;  // the index section claims 200 bytes
  EXPECT_HAS(Rejection("topk(k=3)", lying, 100), "claims 200 bytes");
}

TEST(CodecValidationTest, TrailingBytes) {
  EXPECT_HAS(Rejection("topk(k=3)", Sparse(3, {1, 1, 1}, 3, 2), 100), "2 trailing bytes");
  auto q8 = *MakeCodec("q8");
  Bytes b = *q8->Encode(std::vector<float>(64, 1.0f));
  b.push_back(0);
  EXPECT_HAS(Rejection("q8", b, 64), "value section has 69 bytes");
  auto z = *MakeCodec("q8+zstd");
  Bytes zb = *z->Encode(std::vector<float>(64, 1.0f));
  zb.push_back(0);
  EXPECT_HAS(Rejection("q8+zstd", zb, 64), "trailing bytes after the frame");
}

TEST(CodecValidationTest, BitsThatDoNotFit) {
  // q4 with 3 values: 4 + 2 bytes; the high nibble of the last byte is padding.
  Bytes b;
  ByteWriter w(&b);
  w.F32(1.0f), w.U8(0x21), w.U8(0xf3);
  EXPECT_HAS(Rejection("q4", b, 3), "padding bits after the last of 3 codes are not zero");
  b.back() = 0x03;
  EXPECT_TRUE((*MakeCodec("q4"))->Validate(b, 3).ok());
  Bytes s;  // sign with 5 values: bits 5..7 must be zero
  ByteWriter sw(&s);
  sw.F32(1.0f), sw.U8(0x20);
  EXPECT_HAS(Rejection("sign", s, 5), "padding bits");
  Bytes wide = Sparse(1, {}, 0);  // a varint of 6 bytes
  wide = {1, 0, 0, 0, 0, 6, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
  for (int i = 0; i < 4; ++i) wide.push_back(0);
  EXPECT_HAS(Rejection("topk(k=3)", wide, 100), "longer than 32 bits");
}

TEST(CodecValidationTest, NonFiniteAndNegativeScalesAndValues) {
  auto q8 = *MakeCodec("q8");
  Bytes b = *q8->Encode(std::vector<float>(1024, 1.0f));
  for (float bad : {NAN, INFINITY, -INFINITY}) {
    std::memcpy(b.data() + 4, &bad, 4);  // the second chunk's scale
    EXPECT_HAS(Rejection("q8", b, 1024), "scale of chunk 1 is non-finite");
  }
  const float neg = -1.0f;
  std::memcpy(b.data() + 4, &neg, 4);
  EXPECT_HAS(Rejection("q8", b, 1024), "scale of chunk 1 is negative");
  Bytes f = Sparse(2, {3, 4}, 2);
  const float nan = NAN;
  std::memcpy(f.data() + f.size() - 4, &nan, 4);
  EXPECT_HAS(Rejection("topk(k=3)", f, 100), "value 1 is non-finite");
}

// Dense validation works on the floats' bits (one vectorized pass): each kind of non-finite value
// is found and named by its index, in any position (the first, past the first 4,096-float block,
// the last), and max_abs is the largest magnitude, negative values, subnormals and -0 included.
TEST(CodecValidationTest, DenseFindsEveryNonFiniteValueAndItsLargestMagnitude) {
  auto dense = *MakeCodec("dense");
  const size_t n = 10'000;
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = 1e-3f * std::sin(static_cast<float>(i));
  values[17] = -0.0f;
  values[18] = 1e-40f;  // subnormal
  values[6001] = -3.75f;
  auto bytes_of = [](const std::vector<float>& v) {
    Bytes b(v.size() * sizeof(float));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  };
  Result<UpdateStats> st = dense->Validate(bytes_of(values), n);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->max_abs, 3.75);
  EXPECT_EQ(st->values, n);
  values[6001] = 0.0f;
  values[18] = -1e-40f;
  for (size_t i = 0; i < n; ++i) values[i] = i == 18 ? values[i] : 0.0f;
  st = dense->Validate(bytes_of(values), n);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->max_abs, static_cast<double>(1e-40f));

  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (size_t at : {size_t{0}, size_t{4096}, size_t{5000}, n - 1}) {
    for (float bad : {nan, -nan, inf, -inf}) {
      std::vector<float> v(n, 0.5f);
      v[at] = bad;
      if (at + 1 < n) v[n - 1] = -inf;  // a later one too: the first is named
      EXPECT_NE(Rejection("dense", bytes_of(v), n).find("at index " + std::to_string(at)),
                std::string::npos)
          << at << " " << bad;
    }
  }
}

TEST(CodecValidationTest, ZstdBombsAndBrokenFrames) {
  // 16 MiB of zeros compresses to under 1 KB but is far above the cap for a 1000-float q8 model
  // (2 scales of 4 bytes + 1000 codes), and is refused before anything is allocated for it.
  Bytes zeros(16 << 20, 0);
  Bytes bomb = *ZstdCompress(zeros, 1);
  EXPECT_LT(bomb.size(), 4u << 10);
  EXPECT_HAS(Rejection("q8+zstd", bomb, 1000),
             "declares 16777216 bytes, more than the cap of 1008");
  // A frame without a declared content size.
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
  Bytes small(1008, 0), frame(ZSTD_compressBound(small.size()));
  ZSTD_outBuffer out{frame.data(), frame.size(), 0};
  ZSTD_inBuffer in{small.data(), small.size(), 0};
  ASSERT_EQ(ZSTD_compressStream2(cctx, &out, &in, ZSTD_e_end), 0u);
  ZSTD_freeCCtx(cctx);
  frame.resize(out.pos);
  EXPECT_HAS(Rejection("q8+zstd", frame, 1000), "does not declare its content size");
  EXPECT_HAS(Rejection("q8+zstd", Bytes{1, 2, 3, 4, 5, 6, 7, 8}, 1000), "not a zstd frame");
  Bytes good = *(*MakeCodec("q8+zstd"))->Encode(std::vector<float>(1000, 0.5f));
  Bytes cut(good.begin(), good.end() - 3);
  EXPECT_HAS(Rejection("q8+zstd", cut, 1000), "truncated or malformed frame");
  // A valid frame whose content is not a valid inner payload.
  EXPECT_HAS(Rejection("q8+zstd", *ZstdCompress(Bytes(50, 0), 3), 1000),
             "value section has 50 bytes");
}

TEST(CodecValidationTest, ModelSizeMismatch) {
  auto c = *MakeCodec("q8");
  Bytes b = *c->Encode(std::vector<float>(1000, 0.5f));
  EXPECT_HAS(Rejection("q8", b, 999), "999 values need");
  EXPECT_HAS(Rejection("q8", b, 1001), "1001 values need");
}

TEST(CodecStateTest, RoundTripsAndRejectsBadFiles) {
  CodecState s{"topk(0.01)+q8", {1.5f, -2.0f, 0.0f}};
  Bytes b = SerializeCodecState(s);
  Result<CodecState> back = ParseCodecState(b, 10);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->spec, s.spec);
  EXPECT_EQ(back->residual, s.residual);
  EXPECT_HAS(ParseCodecState(b, 2).status().message(), "exceed the cap of 2");
  Bytes cut(b.begin(), b.end() - 1);
  EXPECT_HAS(ParseCodecState(cut, 10).status().message(), "the file has 11");
  Bytes bad = b;
  bad[0] = 'X';
  EXPECT_HAS(ParseCodecState(bad, 10).status().message(), "bad magic");
  Bytes nan = b;
  const float v = NAN;
  std::memcpy(nan.data() + nan.size() - 4, &v, 4);
  EXPECT_HAS(ParseCodecState(nan, 10).status().message(), "residual value 2 is non-finite");
}

}  // namespace
}  // namespace tributary
