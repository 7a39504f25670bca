#include "compression/pipeline_codec.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "compression/byte_io.h"
#include "compression/index_coding.h"
#include "compression/selection.h"
#include "compression/value_coding.h"
#include "compression/zstd_frame.h"
#include "core/check.h"
#include "core/rng.h"

namespace tributary {
namespace {

static_assert(std::endian::native == std::endian::little, "the codecs assume a little-endian host");

constexpr size_t kDecodeBlock = 1024;  // values decoded per sink call
constexpr size_t kSparseHeaderBytes = 4;

// Values the pipelines encode: finite and at most kMaxEncodable in magnitude, so no scale, level
// spacing or random-k gain overflows. (The coordinator refuses far smaller values anyway.)
constexpr float kMaxEncodable = 1e30f;

Status CheckEncodable(std::span<const float> x, const char* what) {
  bool ok = true;
  for (float v : x) ok &= std::fabs(v) <= kMaxEncodable;  // false for NaN
  if (ok) return Status::Ok();
  for (size_t i = 0; i < x.size(); ++i)
    if (!(std::fabs(x[i]) <= kMaxEncodable))
      return Status::InvalidArgument(
          std::string(what) + " holds a non-finite or too large value (" + std::to_string(x[i]) +
          ") at index " + std::to_string(i) + "; |value| must be at most 1e30");
  return Status::Ok();
}

}  // namespace

PipelineCodec::PipelineCodec(const PipelineSpec& spec)
    : spec_(spec), canonical_(spec.Canonical()) {}

size_t PipelineCodec::MaxInnerBytes(size_t n) const {
  const ValueFormat vf = ValueFormat::Of(spec_);
  if (spec_.sparsifier == Sparsifier::kNone) return vf.SectionBytes(n);
  const size_t k = spec_.KeepCount(n);
  return kSparseHeaderBytes + kIndexHeaderBytes + std::max(5 * k, BitmapIndexBytes(n)) +
         vf.SectionBytes(k);
}

Result<std::vector<uint8_t>> PipelineCodec::Encode(std::span<const float> delta, CodecState* state,
                                                   uint64_t seed) const {
  const size_t n = delta.size();
  if (n > UINT32_MAX)
    return Status::InvalidArgument("codec '" + canonical_ + "': " + std::to_string(n) +
                                   " floats is more than 2^32 - 1");
  TRIB_RETURN_IF_ERROR(CheckEncodable(delta, "the delta"));
  const bool feedback = spec_.error_feedback && state != nullptr;
  std::span<float> residual;  // empty without feedback
  if (feedback) {
    std::vector<float>& r = state->residual;
    if (r.empty()) r.assign(n, 0.0f);
    if (r.size() != n)
      return Status::InvalidArgument(
          "codec '" + canonical_ + "': the error-feedback residual has " +
          std::to_string(r.size()) + " floats, the delta " + std::to_string(n) +
          " (reset the state when the model changes)");
    // One pass: add, and check the sum (a second pass over a 40 MB residual costs more than the
    // compare).
    bool ok = true;
    for (size_t i = 0; i < n; ++i) {
      r[i] += delta[i];
      ok &= std::fabs(r[i]) <= kMaxEncodable;
    }
    if (Status s = ok ? Status::Ok() : CheckEncodable(r, "delta + residual"); !s.ok()) {
      r.clear();  // an overflowed residual carries nothing worth keeping
      return s;
    }
    state->spec = canonical_;
    residual = r;
  }
  TRIB_ASSIGN_OR_RETURN(std::vector<uint8_t> inner,
                        EncodeInner(feedback ? residual : delta, residual, seed));
  if (!spec_.zstd) return inner;
  return ZstdCompress(inner, spec_.zstd_level);
}

// Encodes x. With error feedback, `residual` is the same buffer as x (delta + old residual) and is
// left holding x - decoded; otherwise it is empty.
Result<std::vector<uint8_t>> PipelineCodec::EncodeInner(std::span<const float> x,
                                                        std::span<float> residual,
                                                        uint64_t seed) const {
  const bool feedback = !residual.empty();
  const size_t n = x.size();
  const ValueFormat vf = ValueFormat::Of(spec_);
  std::vector<uint8_t> out;
  float block[kDecodeBlock];
  if (spec_.sparsifier == Sparsifier::kNone) {
    out.reserve(vf.SectionBytes(n));
    EncodeValues(vf, x, seed, &out);
    if (feedback) {
      for (size_t i = 0; i < n; i += kDecodeBlock) {
        const size_t len = std::min(kDecodeBlock, n - i);
        DecodeValues(vf, out, n, i, len, block);
        for (size_t j = 0; j < len; ++j) residual[i + j] -= block[j];
      }
    }
    return out;
  }
  const size_t k = spec_.KeepCount(n);
  const bool random = spec_.sparsifier == Sparsifier::kRandK;
  const std::vector<uint32_t> idx =
      random ? RandKIndices(n, k, DeriveSeed(seed, {1})) : TopKIndices(x, k);
  const float gain =
      random ? static_cast<float>(static_cast<double>(n) / static_cast<double>(k)) : 1.0f;
  std::vector<float> values(idx.size());
  for (size_t j = 0; j < idx.size(); ++j) values[j] = x[idx[j]] * gain;
  if (random) TRIB_RETURN_IF_ERROR(CheckEncodable(values, "the random-k values scaled by n / k"));
  ByteWriter w(&out);
  w.U32(static_cast<uint32_t>(idx.size()));
  EncodeIndices(idx, n, &out);
  const size_t value_at = out.size();
  EncodeValues(vf, values, DeriveSeed(seed, {2}), &out);
  if (feedback) {
    const std::span<const uint8_t> section(out.data() + value_at, out.size() - value_at);
    for (size_t j = 0; j < idx.size(); j += kDecodeBlock) {
      const size_t len = std::min(kDecodeBlock, idx.size() - j);
      DecodeValues(vf, section, idx.size(), j, len, block);
      for (size_t l = 0; l < len; ++l) residual[idx[j + l]] -= block[l];
    }
  }
  return out;
}

Result<UpdateStats> PipelineCodec::Validate(std::span<const uint8_t> bytes,
                                            size_t num_floats) const {
  Result<UpdateStats> r = [&]() -> Result<UpdateStats> {
    if (num_floats > UINT32_MAX)
      return Status::Corruption("a model of " + std::to_string(num_floats) +
                                " floats is more than 2^32 - 1");
    if (!spec_.zstd) return ValidateInner(bytes, num_floats);
    TRIB_ASSIGN_OR_RETURN(std::vector<uint8_t> inner,
                          ZstdDecompress(bytes, MaxInnerBytes(num_floats)));
    return ValidateInner(inner, num_floats);
  }();
  if (!r.ok()) return Status::Corruption(canonical_ + " update: " + r.status().message());
  return r;
}

Result<UpdateStats> PipelineCodec::ValidateInner(std::span<const uint8_t> inner, size_t n) const {
  const ValueFormat vf = ValueFormat::Of(spec_);
  UpdateStats st;
  if (spec_.sparsifier == Sparsifier::kNone) {
    TRIB_RETURN_IF_ERROR(ValidateValues(vf, inner, n, &st.max_abs));
    st.values = n;
    return st;
  }
  ByteReader r(inner);
  uint32_t count = 0;
  if (!r.U32(&count)) return Status::Corruption("truncated payload: no value count");
  const size_t k = spec_.KeepCount(n);
  if (spec_.sparsifier == Sparsifier::kTopK && count > k)
    return Status::Corruption("count " + std::to_string(count) + " exceeds the k of " +
                              std::to_string(k) + " allowed for a model of " + std::to_string(n) +
                              " floats");
  if (spec_.sparsifier == Sparsifier::kRandK && count != k)
    return Status::Corruption("count " + std::to_string(count) + " does not match the k of " +
                              std::to_string(k) + " for a model of " + std::to_string(n) +
                              " floats");
  TRIB_RETURN_IF_ERROR(ReadIndexSection(r, count, n).status());
  const size_t want = vf.SectionBytes(count);
  if (r.remaining() < want)
    return Status::Corruption("truncated payload: " + std::to_string(count) + " values need " +
                              std::to_string(want) + " bytes, " + std::to_string(r.remaining()) +
                              " remain");
  if (r.remaining() > want)
    return Status::Corruption(std::to_string(r.remaining() - want) +
                              " trailing bytes after the last value");
  std::span<const uint8_t> section;
  r.Take(want, &section);
  TRIB_RETURN_IF_ERROR(ValidateValues(vf, section, count, &st.max_abs));
  st.values = count;
  return st;
}

void PipelineCodec::DecodeInto(std::span<const uint8_t> bytes, UpdateSink& sink,
                               float scale) const {
  if (!spec_.zstd) return DecodeInner(bytes, sink, scale);
  Result<std::vector<uint8_t>> inner = ZstdDecompress(bytes, MaxInnerBytes(sink.size()));
  TRIB_CHECK(inner.ok(), "DecodeInto on a payload that did not pass Validate");
  DecodeInner(*inner, sink, scale);
}

void PipelineCodec::DecodeInner(std::span<const uint8_t> inner, UpdateSink& sink,
                                float scale) const {
  const ValueFormat vf = ValueFormat::Of(spec_);
  const size_t n = sink.size();
  alignas(64) float values[kDecodeBlock];
  if (spec_.sparsifier == Sparsifier::kNone) {
    for (size_t i = 0; i < n; i += kDecodeBlock) {
      const size_t len = std::min(kDecodeBlock, n - i);
      DecodeValues(vf, inner, n, i, len, values);
      sink.AddDense(i, std::span<const float>(values, len), scale);
    }
    return;
  }
  ByteReader r(inner);
  uint32_t count = 0;
  r.U32(&count);
  Result<IndexSection> section = ReadIndexSection(r, count, n);
  TRIB_CHECK(section.ok(), "DecodeInto on a payload that did not pass Validate");
  std::span<const uint8_t> value_bytes;
  r.Take(r.remaining(), &value_bytes);
  IndexCursor cursor(*section);
  alignas(64) uint32_t index[kDecodeBlock];
  for (size_t j = 0; j < count;) {
    const size_t got = cursor.Next(index, std::min<size_t>(kDecodeBlock, count - j));
    TRIB_CHECK(got > 0, "index section ended early");
    DecodeValues(vf, value_bytes, count, j, got, values);
    sink.AddSparse(std::span<const uint32_t>(index, got), std::span<const float>(values, got),
                   scale);
    j += got;
  }
}

}  // namespace tributary
