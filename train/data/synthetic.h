// Synthetic labeled images for tests and benchmarks that must not depend on a real data set.
//
// Each class gets a random prototype image. The prototype is blocky: random values on a grid of
// `block` x `block` pixel cells, so it has spatial structure a convolution can pick up as well as
// per-pixel structure an MLP can. A sample is its class prototype plus independent Gaussian noise
// of standard deviation `noise` per value, clamped to [0, 1]. Labels are balanced (sizes differ by
// at most one across classes) and in random order. With the defaults a nearest-class-mean
// classifier is near-perfect, so a small MLP or CNN can learn it.
//
// Deterministic: the output depends only on the spec (tributary::Rng, no std:: distributions).
#pragma once

#include <cstdint>

#include "train/data/dataset.h"

namespace tributary {

struct SyntheticSpec {
  int64_t n = 1000;
  int64_t height = 8;
  int64_t width = 8;
  int64_t channels = 1;
  int num_classes = 10;
  uint64_t seed = 0;
  float noise = 0.2f;  // standard deviation of the per-value Gaussian noise
  int64_t block = 2;   // side of the prototype's constant cells, in pixels
};

// Builds the data set; aborts (TRIB_CHECK) on a spec with non-positive sizes or num_classes
// outside 1..256, since specs come from code, not from users. The Dataset is named "synthetic".
Dataset MakeSyntheticDataset(const SyntheticSpec& spec);

}  // namespace tributary
