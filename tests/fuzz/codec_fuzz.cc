// libFuzzer entry point for the codec pipelines (compression/). Input layout:
//   byte 0      which spec of kFuzzSpecs
//   bytes 1-2   num_floats (little-endian u16, taken modulo 4097)
//   byte 3      mode: even = the input is an encoded update; odd = the input is a delta to encode
//   the rest    the payload (mode even) or float32 values (mode odd)
// Besides "no crash, no sanitizer report", it aborts when a property breaks:
//   - an update that passes Validate decodes to finite values no larger than its max_abs, and
//     decoding into the fixed-point accumulator equals folding the dense decode;
//   - whatever Encode produces (with error feedback state) passes Validate, and
//     residual + decoded == delta + old residual (to float rounding).
// Built with clang as codec_fuzzer, and with any compiler into codec_fuzz_replay, which ctest runs
// over codec_corpus/ (regenerate with codec_make_corpus tests/fuzz/codec_corpus).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "compression/codec.h"
#include "compression/dense_codec.h"
#include "tests/fuzz/codec_fuzz_specs.h"

namespace {

using namespace tributary;

void Require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz property broken: %s\n", what);
    std::abort();
  }
}

// The one-pass dense fold (FixedPointSink::FoldDenseBytes, the engines' path for FedAvg) on any
// bytes of the right size: it folds exactly what Validate + the range check + DecodeInto would,
// and when they refuse, it leaves the sum as it was.
void CheckDenseOnePass(std::span<const uint8_t> bytes, size_t n) {
  if (bytes.size() != n * 4) return;
  constexpr uint64_t kWeight = 3;
  const int32_t largest = FixedPointSink::LargestBitsFor(kWeight);
  Result<UpdateStats> st = DenseCodec().Validate(bytes, n);
  const bool fits =
      st.ok() && st->max_abs * static_cast<double>(kWeight) < FixedPointSink::kMaxFixedPointTerm;
  FixedPointSum one, two, decoded;
  one.Reset(n);
  two.Reset(n);
  decoded.Reset(n);
  FixedPointSink a(one, kWeight), b(two, kWeight), d(decoded, kWeight);
  const bool folded = a.FoldDenseBytesOnePass(bytes, 1.0f, largest) <= largest;
  Require(folded == fits, "the one-pass fold takes exactly the updates the checks accept");
  Require((b.FoldDenseBytesTwoPass(bytes, 1.0f, largest) <= largest) == fits,
          "the two-pass fold takes exactly the updates the checks accept");
  if (fits) DenseCodec().DecodeInto(bytes, d, 1.0f);
  Require(one == decoded && two == decoded,
          "the dense folds equal DecodeInto's, or leave the sum untouched");
}

void CheckDecode(const Codec& codec, std::span<const uint8_t> bytes, size_t n) {
  if (codec.spec() == "dense") CheckDenseOnePass(bytes, n);
  Result<UpdateStats> st = codec.Validate(bytes, n);
  if (!st.ok()) {
    Require(st.status().code() == StatusCode::kCorruption, "Validate fails with Corruption");
    Require(!st.status().message().empty(), "a rejection says why");
    return;
  }
  Require(st->values <= n, "values carried <= num_floats");
  std::vector<float> dense(n, 0.0f);
  BufferSink sink(dense);
  codec.DecodeInto(bytes, sink, 1.0f);
  for (float v : dense) {
    Require(std::isfinite(v), "a validated update decodes to finite values");
    Require(std::fabs(v) <= st->max_abs * (1 + 1e-6), "decoded values are within max_abs");
  }
  if (st->max_abs * 4.0 >= FixedPointSink::kMaxFixedPointTerm) return;
  FixedPointSum direct, folded;
  direct.Reset(n);
  folded.Reset(n);
  FixedPointSink d(direct), f(folded);
  codec.DecodeInto(bytes, d, 4.0f);
  f.AddDense(0, dense, 4.0f);
  Require(direct == folded, "fixed-point decode equals the folded dense decode");
}

void CheckEncode(const Codec& codec, std::span<const uint8_t> data, uint64_t seed) {
  const size_t n = std::min<size_t>(data.size() / 4, 4096);
  std::vector<float> delta(n);
  if (n) std::memcpy(delta.data(), data.data(), n * 4);
  CodecState state;
  // A residual from an earlier round: the delta reversed.
  state.residual.assign(delta.rbegin(), delta.rend());
  for (float& r : state.residual)
    if (!std::isfinite(r) || std::fabs(r) > 1e20f) r = 0.0f;
  const std::vector<float> old = state.residual;
  Result<std::vector<uint8_t>> bytes = codec.Encode(delta, &state, seed);
  if (!bytes.ok()) {
    Require(bytes.status().code() == StatusCode::kInvalidArgument, "Encode fails as bad input");
    return;
  }
  bool finite = true;
  for (float v : delta) finite &= std::isfinite(v);
  Result<UpdateStats> st = codec.Validate(*bytes, n);
  if (!finite && codec.spec() == "dense") return;  // dense sends NaN as is; Validate refuses it
  Require(st.ok(), "what Encode produces passes Validate");
  CheckDecode(codec, *bytes, n);
  if (!codec.uses_error_feedback()) return;
  std::vector<float> dense(n, 0.0f);
  BufferSink sink(dense);
  codec.DecodeInto(*bytes, sink, 1.0f);
  for (size_t i = 0; i < n; ++i) {
    const double acc = static_cast<double>(static_cast<float>(delta[i] + old[i]));
    const double got = static_cast<double>(state.residual[i]) + dense[i];
    Require(std::fabs(got - acc) <= 1e-6 * (1.0 + std::fabs(acc)) + 1e-6 * st->max_abs,
            "residual + decoded == delta + old residual");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const char* spec = kFuzzSpecs[data[0] % kNumFuzzSpecs];
  const size_t n = (static_cast<size_t>(data[1]) | static_cast<size_t>(data[2]) << 8) % 4097;
  const bool encode = data[3] & 1;
  Result<std::unique_ptr<Codec>> codec = MakeCodec(spec);
  Require(codec.ok(), "every fuzz spec parses");
  std::span<const uint8_t> rest(data + 4, size - 4);
  if (encode)
    CheckEncode(**codec, rest, data[3]);
  else
    CheckDecode(**codec, rest, n);
  return 0;
}
