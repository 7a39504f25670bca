// Writes the seed corpus for codec_fuzz into the directory given as argv[1]: a valid update and a
// delta to encode for every spec of codec_fuzz_specs.h, and the malformed updates the validation
// tests cover (index out of range, indices that do not increase, counts that do not match,
// truncations, padding bits set, trailing bytes, a NaN scale, a zstd bomb, a frame without a
// content size). Run once by hand (codec_make_corpus tests/fuzz/codec_corpus); the output is
// committed.
#include <zstd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "compression/byte_io.h"
#include "compression/codec.h"
#include "compression/zstd_frame.h"
#include "core/file_util.h"
#include "tests/fuzz/codec_fuzz_specs.h"

namespace {

using namespace tributary;
using Bytes = std::vector<uint8_t>;

size_t SpecIndex(const char* spec) {
  for (size_t i = 0; i < kNumFuzzSpecs; ++i)
    if (std::string(kFuzzSpecs[i]) == spec) return i;
  std::fprintf(stderr, "no fuzz spec %s\n", spec);
  std::exit(1);
}

Bytes Input(const char* spec, size_t n, bool encode, const Bytes& payload) {
  Bytes b(4 + payload.size());
  b[0] = static_cast<uint8_t>(SpecIndex(spec));
  b[1] = static_cast<uint8_t>(n & 0xff);
  b[2] = static_cast<uint8_t>(n >> 8);
  b[3] = encode ? 1 : 0;
  if (!payload.empty()) std::memcpy(b.data() + 4, payload.data(), payload.size());
  return b;
}

std::vector<float> Wave(size_t n) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = 0.01f * std::sin(0.37f * static_cast<float>(i) + 1.0f);
  return x;
}

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

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  int written = 0;
  auto put = [&](const std::string& name, const Bytes& b) {
    Status s = WriteFileAtomic(dir + "/" + name, b);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      std::exit(1);
    }
    ++written;
  };
  const size_t n = 300;
  const std::vector<float> x = Wave(n);
  Bytes raw(n * 4);
  std::memcpy(raw.data(), x.data(), raw.size());
  for (size_t i = 0; i < kNumFuzzSpecs; ++i) {
    auto codec = *MakeCodec(kFuzzSpecs[i]);
    put("valid_" + std::to_string(i),
        Input(kFuzzSpecs[i], n, false, *codec->Encode(x, nullptr, 5)));
    put("encode_" + std::to_string(i), Input(kFuzzSpecs[i], n, true, raw));
  }
  put("bad_index_out_of_range", Input("topk(k=5)", 100, false, Sparse(3, {5, 10, 200}, 3)));
  put("bad_non_increasing", Input("topk(k=5)", 100, false, Sparse(3, {5, 0, 1}, 3)));
  put("bad_count_above_k", Input("topk(k=5)", 100, false, Sparse(6, {1, 1, 1, 1, 1, 1}, 6)));
  put("bad_count_vs_indices", Input("topk(k=5)", 100, false, Sparse(2, {1, 1, 1}, 2)));
  put("bad_trailing", Input("topk(k=5)", 100, false, Sparse(3, {1, 1, 1}, 3, 2)));
  put("bad_truncated_values", Input("topk(k=5)", 100, false, Sparse(3, {1, 1, 1}, 2)));
  put("bad_varint_too_long",
      Input("topk(k=5)", 100, false,
            {1, 0, 0, 0, 0, 6, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 1, 0, 0, 0, 0}));
  Bytes bitmap;  // count 3, but two bits set; and a bit past the model
  ByteWriter bw(&bitmap);
  bw.U32(3), bw.U8(1), bw.U32(2), bw.U8(0x03), bw.U8(0x10);
  for (int i = 0; i < 3; ++i) bw.F32(1.0f);
  put("bad_bitmap", Input("topk(0.5)+q4", 12, false, bitmap));
  Bytes q4;  // the padding nibble set
  ByteWriter qw(&q4);
  qw.F32(1.0f), qw.U8(0x21), qw.U8(0xf3);
  put("bad_padding_bits", Input("q4", 3, false, q4));
  Bytes q8 = *(*MakeCodec("q8"))->Encode(Wave(600));
  const float nan = NAN;
  std::memcpy(q8.data() + 4, &nan, 4);
  put("bad_nan_scale", Input("q8", 600, false, q8));
  Bytes truncated = *(*MakeCodec("topk(0.1)+q8+zstd"))->Encode(x);
  truncated.resize(truncated.size() - 3);
  put("bad_truncated_zstd", Input("topk(0.1)+q8+zstd", n, false, truncated));
  put("bad_zstd_bomb", Input("sign+zstd", n, false, *ZstdCompress(Bytes(1 << 20, 0), 1)));
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
  Bytes small(80, 0), frame(ZSTD_compressBound(small.size()));
  ZSTD_outBuffer out{frame.data(), frame.size(), 0};
  ZSTD_inBuffer in{small.data(), small.size(), 0};
  ZSTD_compressStream2(cctx, &out, &in, ZSTD_e_end);
  ZSTD_freeCCtx(cctx);
  frame.resize(out.pos);
  put("bad_zstd_no_content_size", Input("sign+zstd", n, false, frame));
  std::printf("wrote %d inputs to %s\n", written, dir.c_str());
  return 0;
}
