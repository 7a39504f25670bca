#include "aggregation/norm_clip.h"

#include <algorithm>
#include <cmath>

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

Status NormClip::Accumulate(double weight, const UpdateWriter& writer) {
  // The scratch buffer is sized by BeginRound; never let a writer run past it.
  if (!begun_) return Status::FailedPrecondition(name_ + ": Accumulate before BeginRound");
  std::fill(scratch_.begin(), scratch_.end(), 0.0f);
  BufferSink sink(scratch_);
  writer(sink, 1.0f);
  double sq = 0.0;
  for (float v : scratch_) sq += static_cast<double>(v) * v;
  const double norm = std::sqrt(sq);
  if (!std::isfinite(norm))
    return Status::InvalidArgument(name_ + ": update has a non-finite norm");
  const bool clip = norm > max_norm_;
  const float factor = clip ? static_cast<float>(max_norm_ / norm) : 1.0f;
  Status s = inner_->Accumulate(
      weight, [&](UpdateSink& out, float scale) { out.AddDense(0, scratch_, scale * factor); });
  if (s.ok() && clip) ++clipped_;
  return s;
}

}  // namespace tributary
