// The input check of a model that starts with an Embedding (train/embedding_math.h): its input
// values are token ids, integers in [0, vocab). An engine looks up nothing for any other value, so
// the trainer refuses such data first, naming the sample and position.
#pragma once

#include <span>
#include <string_view>

#include "train/model_spec.h"
#include "tributary/status.h"

namespace tributary {

// Ok when `spec` does not start with an Embedding, or when every value of `samples` (whole samples
// of spec.input.numel() values) is a token id of its vocabulary. Otherwise InvalidArgument:
// "<what>: sample 3, position 7 holds 71.5, not a token id of model M's embedding (0 to 63)".
Status CheckTokenIds(const ModelSpec& spec, std::span<const float> samples, std::string_view what);

}  // namespace tributary
