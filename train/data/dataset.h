// Dataset: labeled images held in memory, ready for training.
//
// Images are float32 in [0, 1], stored sample after sample, each in HWC order (height, width,
// channels), so sample i starts at images[i * sample_size()]. Labels are class ids < num_classes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

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

}  // namespace tributary
