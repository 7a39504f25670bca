// PipelineCodec: every spec but "dense" — an optional sparsifier (topk/randk), a value coding
// (float32, q8..q1, sign) and an optional zstd stage, as described in codec_spec.h.
//
// Wire format (the inner payload; with zstd, the payload is one zstd frame holding it):
//   no sparsifier:  the value section for all n values (value_coding.h)
//   topk / randk:   u32 count, the index section (index_coding.h), the value section for `count`
//                   values. topk sends count <= k (it never sends zeros); randk sends exactly k,
//                   with each value multiplied by n / k so the decode is unbiased.
// Byte counts: dense-value pipelines are exactly ValueFormat::SectionBytes(n); sparse ones are
// 4 + 5 + index bytes + SectionBytes(count). Nothing follows the last section.
//
// Error feedback (topk by default, sign with ef=1): Encode adds the state's residual to the delta
// before selecting and quantizing, and keeps (delta + old residual) - decoded(payload) as the new
// residual, computed in place in the state (no extra dense buffer).
#pragma once

#include <string>

#include "compression/codec.h"
#include "compression/codec_spec.h"

namespace tributary {

class PipelineCodec final : public Codec {
 public:
  using Codec::Encode;
  explicit PipelineCodec(const PipelineSpec& spec);

  std::string_view spec() const override { return canonical_; }
  bool uses_error_feedback() const override { return spec_.error_feedback; }
  bool usable_for_download() const override {
    return spec_.sparsifier == Sparsifier::kNone && !spec_.error_feedback &&
           (spec_.values == ValueCoding::kF32 ||
            (spec_.values == ValueCoding::kQuantized && spec_.bits >= 8));
  }
  Result<std::vector<uint8_t>> Encode(std::span<const float> delta, CodecState* state,
                                      uint64_t seed) const override;
  Result<UpdateStats> Validate(std::span<const uint8_t> bytes, size_t num_floats) const override;
  void DecodeInto(std::span<const uint8_t> bytes, UpdateSink& sink, float scale) const override;

  const PipelineSpec& pipeline() const { return spec_; }
  // The most bytes an inner payload for n floats can hold: the cap on a zstd frame's content.
  size_t MaxInnerBytes(size_t n) const;

 private:
  Result<std::vector<uint8_t>> EncodeInner(std::span<const float> x, std::span<float> residual,
                                           uint64_t seed) const;
  Result<UpdateStats> ValidateInner(std::span<const uint8_t> inner, size_t n) const;
  void DecodeInner(std::span<const uint8_t> inner, UpdateSink& sink, float scale) const;

  PipelineSpec spec_;
  std::string canonical_;
};

}  // namespace tributary
