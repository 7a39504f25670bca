#include "train/data/dataset.h"

#include <algorithm>

#include "core/check.h"

namespace tributary {

Dataset Dataset::Subset(std::span<const uint32_t> indices) const {
  Dataset out;
  out.name = name;
  out.height = height;
  out.width = width;
  out.channels = channels;
  out.num_classes = num_classes;
  const int64_t ss = sample_size();
  out.images.resize(indices.size() * ss);
  out.labels.resize(indices.size());
  for (size_t k = 0; k < indices.size(); ++k) {
    TRIB_CHECK(indices[k] < labels.size(), "subset index out of range");
    std::copy_n(image(indices[k]), ss, out.images.data() + k * ss);
    out.labels[k] = labels[indices[k]];
  }
  return out;
}

}  // namespace tributary
