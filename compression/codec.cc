#include "compression/codec.h"

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

std::vector<std::string> SupportedCodecs() {
  return {"dense", "topk", "randk", "q8", "q4", "q2", "q1", "sign", "zstd"};
}

}  // namespace tributary
