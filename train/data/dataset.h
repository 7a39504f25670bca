// Dataset: labeled images held in memory, ready for training.
//
// Images are float32 in [0, 1], stored sample after sample, each in HWC order (height, width,
// channels), so sample i starts at images[i * sample_size()]. Labels are class ids < num_classes.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "tributary/result.h"

namespace tributary {

struct Dataset {
  std::string name;
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 1;
  int num_classes = 10;
  std::vector<float> images;
  std::vector<uint8_t> labels;

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  int64_t sample_size() const { return height * width * channels; }
  const float* image(int64_t i) const { return images.data() + i * sample_size(); }

  // A copy holding only the given samples, in the given order. Indices must be < size().
  Dataset Subset(std::span<const uint32_t> indices) const;
};

// Picks the examples a program keeps from a split, given all of its labels (and its class count):
// the indices to keep, in the order to keep them (each < labels.size()). Loaders that can (the
// Fashion-MNIST one) convert only those examples, so a client holds its share, not the data set.
using ExampleChooser =
    std::function<Result<std::vector<uint32_t>>(std::span<const uint8_t> labels, int num_classes)>;

}  // namespace tributary
