// RandomValues: n floats drawn uniformly from [-1, 1) by an mt19937 seeded with `seed`, the same
// for a seed on every platform; the convolution kernels' tests fill inputs, weights and output
// gradients with them.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace tributary::cpu {

inline std::vector<float> RandomValues(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

}  // namespace tributary::cpu
