#include "train/token_ids.h"

#include <fmt/format.h>

#include "train/embedding_math.h"

namespace tributary {

Status CheckTokenIds(const ModelSpec& spec, std::span<const float> samples, std::string_view what) {
  if (spec.layers.empty() || spec.layers.front().kind != LayerKind::kEmbedding) return Status::Ok();
  const int64_t vocab = spec.layers.front().vocab, per_sample = spec.input.numel();
  for (size_t i = 0; i < samples.size(); ++i) {
    if (TokenRow(samples[i], vocab) >= 0) continue;
    const int64_t sample = static_cast<int64_t>(i) / per_sample,
                  position = static_cast<int64_t>(i) % per_sample;
    return Status::InvalidArgument(
        fmt::format("{}: sample {}, position {} holds {}, not a token id of model {}'s embedding "
                    "(0 to {})",
                    what, sample, position, samples[i], spec.name, vocab - 1));
  }
  return Status::Ok();
}

}  // namespace tributary
