#include "aggregation/norm_clip.h"

#include <algorithm>

#include "compression/l2_clip.h"

namespace tributary {

NormClip::NormClip(double max_norm, std::unique_ptr<Strategy> inner)
    : max_norm_(max_norm), inner_(std::move(inner)), name_("clip+" + std::string(inner_->name())) {}

Status NormClip::BeginRound(const ModelWeights& global) {
  scratch_.assign(global.size(), 0.0f);
  clipped_ = 0;
  TRIB_RETURN_IF_ERROR(inner_->BeginRound(global));
  begun_ = true;
  return Status::Ok();
}

Status NormClip::Accumulate(uint64_t weight, const UpdateWriter& writer) {
  // The scratch buffer is sized by BeginRound; never let a writer run past it.
  if (!begun_) return Status::FailedPrecondition(name_ + ": Accumulate before BeginRound");
  std::fill(scratch_.begin(), scratch_.end(), 0.0f);
  BufferSink sink(scratch_);
  writer(sink, 1.0f);
  // The one L2 clip (compression/l2_clip.h), the same bits as a client's clip of the same update.
  Result<L2Clip> clip = ClipL2(scratch_, max_norm_);
  if (!clip.ok()) return clip.status().WithContext(name_);
  Status s = inner_->Accumulate(
      weight, [&](UpdateSink& out, float scale) { out.AddDense(0, scratch_, scale); });
  if (s.ok() && clip->clipped) ++clipped_;
  return s;
}

}  // namespace tributary
