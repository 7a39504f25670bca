// SyntheticImages: the small synthetic Fashion-MNIST-shaped data set the engine tests train on
// (hw x hw x 1 images in 4x4 blocks, 10 classes), made from a seed.
#pragma once

#include <cstdint>

#include "train/data/synthetic.h"

namespace tributary::testing {

inline Dataset SyntheticImages(int64_t n, uint64_t seed, int64_t hw = 28) {
  SyntheticSpec s;
  s.n = n;
  s.height = hw;
  s.width = hw;
  s.seed = seed;
  s.block = 4;
  return MakeSyntheticDataset(s);
}

}  // namespace tributary::testing
