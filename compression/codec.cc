#include "compression/codec.h"

#include <bit>

#include "compression/codec_spec.h"
#include "compression/dense_codec.h"
#include "compression/pipeline_codec.h"

namespace tributary {

Result<std::unique_ptr<Codec>> MakeCodec(std::string_view spec) {
  if (spec.empty()) return std::unique_ptr<Codec>(std::make_unique<DenseCodec>());
  TRIB_ASSIGN_OR_RETURN(PipelineSpec p, ParseCodecSpec(spec));
  if (p.is_dense()) return std::unique_ptr<Codec>(std::make_unique<DenseCodec>());
  return std::unique_ptr<Codec>(std::make_unique<PipelineCodec>(p));
}

Result<std::unique_ptr<Codec>> MakeDownloadCodec(std::string_view spec) {
  TRIB_ASSIGN_OR_RETURN(std::unique_ptr<Codec> codec, MakeCodec(spec));
  if (!codec->usable_for_download())
    return Status::InvalidArgument(
        "codec '" + std::string(codec->spec()) +
        "' cannot carry a global model: a download codec drops nothing and keeps no residual "
        "(no topk or randk), and keeps at least 8 bits per value (dense, q8, optionally +zstd)");
  return codec;
}

Result<SharedBytes> Codec::EncodeShared(std::shared_ptr<const void> owner,
                                        std::span<const float> delta, CodecState* state,
                                        uint64_t seed) const {
  if (raw_floats()) {
    static_assert(std::endian::native == std::endian::little,
                  "raw float payloads are little-endian float32");
    return SharedBytes(std::move(owner), std::span(reinterpret_cast<const uint8_t*>(delta.data()),
                                                   delta.size() * sizeof(float)));
  }
  TRIB_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, Encode(delta, state, seed));
  return SharedBytes(std::move(bytes));
}

std::vector<std::string> SupportedCodecs() {
  return {"dense", "topk", "randk", "q8", "q4", "q2", "q1", "sign", "zstd"};
}

}  // namespace tributary
