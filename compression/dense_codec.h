// DenseCodec ("dense"): the update as raw little-endian float32, 4 bytes per value. The baseline
// the compressing codecs are measured against. It has no state and ignores the seed.
#pragma once

#include "compression/codec.h"

namespace tributary {

class DenseCodec final : public Codec {
 public:
  using Codec::Encode;
  std::string_view spec() const override { return "dense"; }
  // Corruption naming the sizes unless `bytes` is num_floats floats (Validate's first check).
  static Status CheckSize(size_t bytes, size_t num_floats);
  bool raw_floats() const override { return true; }
  bool usable_for_download() const override { return true; }
  Result<std::vector<uint8_t>> Encode(std::span<const float> delta, CodecState* state,
                                      uint64_t seed) const override;
  Result<UpdateStats> Validate(std::span<const uint8_t> bytes, size_t num_floats) const override;
  void DecodeInto(std::span<const uint8_t> bytes, UpdateSink& sink, float scale) const override;
};

}  // namespace tributary
