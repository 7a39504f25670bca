#include "core/non_finite.h"

#include <cmath>

namespace tributary {

std::optional<NonFinite> FindNonFinite(const ModelWeights& w) {
  for (size_t t = 0; t < w.num_tensors(); ++t) {
    const std::span<const float> v = w.tensor(t);
    for (size_t i = 0; i < v.size(); ++i)
      if (!std::isfinite(v[i])) return NonFinite{w.tensors()[t].name, i, v[i]};
  }
  return std::nullopt;
}

}  // namespace tributary
