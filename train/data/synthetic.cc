#include "train/data/synthetic.h"

#include <algorithm>
#include <vector>

#include "core/check.h"
#include "core/rng.h"

namespace tributary {
namespace {

// Independent streams so that, e.g., changing n does not change the prototypes.
constexpr uint64_t kSyntheticPrototypeStream = 1;
constexpr uint64_t kSyntheticLabelStream = 2;
constexpr uint64_t kSyntheticNoiseStream = 3;

}  // namespace

Dataset MakeSyntheticDataset(const SyntheticSpec& spec) {
  TRIB_CHECK(spec.n >= 0 && spec.height > 0 && spec.width > 0 && spec.channels > 0,
             "synthetic spec needs n >= 0 and positive height, width, channels");
  TRIB_CHECK(spec.num_classes >= 1 && spec.num_classes <= 256, "num_classes must be in 1..256");
  TRIB_CHECK(spec.block >= 1 && spec.noise >= 0.0f, "block must be >= 1 and noise >= 0");

  Dataset ds;
  ds.name = "synthetic";
  ds.height = spec.height;
  ds.width = spec.width;
  ds.channels = spec.channels;
  ds.num_classes = spec.num_classes;
  const int64_t ss = ds.sample_size();

  // Prototypes: one random value per (cell, channel), spread over the cell's pixels.
  Rng proto_rng = Rng::Stream(spec.seed, {kSyntheticPrototypeStream});
  const int64_t cells_y = (spec.height + spec.block - 1) / spec.block;
  const int64_t cells_x = (spec.width + spec.block - 1) / spec.block;
  std::vector<float> prototypes(static_cast<size_t>(spec.num_classes * ss));
  std::vector<float> cells(static_cast<size_t>(cells_y * cells_x * spec.channels));
  for (int c = 0; c < spec.num_classes; ++c) {
    for (float& v : cells) v = proto_rng.UniformFloat();
    float* proto = prototypes.data() + c * ss;
    for (int64_t y = 0; y < spec.height; ++y)
      for (int64_t x = 0; x < spec.width; ++x)
        for (int64_t ch = 0; ch < spec.channels; ++ch)
          proto[(y * spec.width + x) * spec.channels + ch] =
              cells[((y / spec.block) * cells_x + x / spec.block) * spec.channels + ch];
  }

  // Balanced labels in random order.
  ds.labels.resize(static_cast<size_t>(spec.n));
  for (int64_t i = 0; i < spec.n; ++i) ds.labels[i] = static_cast<uint8_t>(i % spec.num_classes);
  Rng label_rng = Rng::Stream(spec.seed, {kSyntheticLabelStream});
  label_rng.Shuffle(std::span<uint8_t>(ds.labels));

  Rng noise_rng = Rng::Stream(spec.seed, {kSyntheticNoiseStream});
  ds.images.resize(static_cast<size_t>(spec.n * ss));
  for (int64_t i = 0; i < spec.n; ++i) {
    const float* proto = prototypes.data() + ds.labels[i] * ss;
    float* out = ds.images.data() + i * ss;
    for (int64_t k = 0; k < ss; ++k) {
      const float v = proto[k] + spec.noise * static_cast<float>(noise_rng.Normal());
      out[k] = std::clamp(v, 0.0f, 1.0f);
    }
  }
  return ds;
}

}  // namespace tributary
