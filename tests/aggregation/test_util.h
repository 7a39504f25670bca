// Helpers shared by the aggregation tests: models, dense and sparse update writers.
#pragma once

#include <cstdint>
#include <vector>

#include "aggregation/strategy.h"

namespace tributary::testing {

inline ModelWeights FlatModel(size_t n, float fill = 0.0f) {
  ModelWeights w = *ModelWeights::Create({{"w", {static_cast<int64_t>(n)}}});
  for (float& v : w.data()) v = fill;
  return w;
}

// Writes `delta` densely. The vector must outlive the writer.
inline UpdateWriter Dense(const std::vector<float>& delta) {
  return [&delta](UpdateSink& sink, float scale) { sink.AddDense(0, delta, scale); };
}

// Writes the nonzeros of `delta` through AddSparse, as a top-k codec would.
inline UpdateWriter Sparse(const std::vector<float>& delta) {
  return [&delta](UpdateSink& sink, float scale) {
    std::vector<uint32_t> idx;
    std::vector<float> val;
    for (size_t i = 0; i < delta.size(); ++i) {
      if (delta[i] == 0.0f) continue;
      idx.push_back(static_cast<uint32_t>(i));
      val.push_back(delta[i]);
    }
    sink.AddSparse(idx, val, scale);
  };
}

}  // namespace tributary::testing
