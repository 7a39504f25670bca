// FindNonFinite: the first NaN or infinity among a model's weights, located by tensor, for the
// places that refuse such a model and must say where (a trainer's fit result, a round's new
// model, a checkpoint); each words its own message.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "tributary/model_weights.h"

namespace tributary {

struct NonFinite {
  std::string tensor;  // its name
  size_t index = 0;    // within the tensor
  float value = 0.0f;  // nan, inf or -inf
};

// The first non-finite weight in tensor order, or nullopt when every weight is finite.
std::optional<NonFinite> FindNonFinite(const ModelWeights& w);

}  // namespace tributary
