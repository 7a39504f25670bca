#include "train/data/synthetic.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <vector>

namespace tributary {
namespace {

// Fits class means on the first half and returns nearest-mean accuracy on the second half.
double NearestMeanAccuracy(const Dataset& ds) {
  const int64_t ss = ds.sample_size();
  const int64_t half = ds.size() / 2;
  std::vector<double> means(static_cast<size_t>(ds.num_classes * ss), 0.0);
  std::vector<int64_t> counts(ds.num_classes, 0);
  for (int64_t i = 0; i < half; ++i) {
    ++counts[ds.labels[i]];
    for (int64_t k = 0; k < ss; ++k) means[ds.labels[i] * ss + k] += ds.image(i)[k];
  }
  for (int c = 0; c < ds.num_classes; ++c)
    for (int64_t k = 0; k < ss; ++k) means[c * ss + k] /= std::max<int64_t>(counts[c], 1);
  int64_t correct = 0;
  for (int64_t i = half; i < ds.size(); ++i) {
    int best = -1;
    double best_d = std::numeric_limits<double>::max();
    for (int c = 0; c < ds.num_classes; ++c) {
      double d = 0;
      for (int64_t k = 0; k < ss; ++k) {
        const double diff = ds.image(i)[k] - means[c * ss + k];
        d += diff * diff;
      }
      if (d < best_d) best_d = d, best = c;
    }
    correct += best == ds.labels[i] ? 1 : 0;
  }
  return static_cast<double>(correct) / static_cast<double>(ds.size() - half);
}

TEST(SyntheticTest, ShapeRangeAndBalance) {
  const Dataset ds = MakeSyntheticDataset(
      {.n = 1003, .height = 6, .width = 5, .channels = 3, .num_classes = 7, .seed = 4});
  EXPECT_EQ(ds.name, "synthetic");
  EXPECT_EQ(ds.size(), 1003);
  EXPECT_EQ(ds.sample_size(), 90);
  EXPECT_EQ(ds.num_classes, 7);
  ASSERT_EQ(ds.images.size(), 1003u * 90u);
  const auto [lo, hi] = std::minmax_element(ds.images.begin(), ds.images.end());
  EXPECT_GE(*lo, 0.0f);
  EXPECT_LE(*hi, 1.0f);
  std::vector<int> hist(7, 0);
  for (uint8_t l : ds.labels) ++hist[l];
  for (int h : hist) EXPECT_TRUE(h == 143 || h == 144) << h;  // 1003 = 7 * 143 + 2
  // Labels are shuffled, not 0,1,2,...
  int in_order = 0;
  for (int64_t i = 0; i < ds.size(); ++i) in_order += ds.labels[i] == i % 7 ? 1 : 0;
  EXPECT_LT(in_order, 400);
}

TEST(SyntheticTest, DeterministicForASeed) {
  const SyntheticSpec spec{.n = 200, .seed = 11};
  const Dataset a = MakeSyntheticDataset(spec);
  const Dataset b = MakeSyntheticDataset(spec);
  EXPECT_EQ(a.images, b.images);
  EXPECT_EQ(a.labels, b.labels);
  SyntheticSpec other = spec;
  other.seed = 12;
  const Dataset c = MakeSyntheticDataset(other);
  EXPECT_NE(a.images, c.images);
  EXPECT_NE(a.labels, c.labels);
}

TEST(SyntheticTest, LearnableByNearestClassMean) {
  // Defaults: 8x8x1, 10 classes, noise 0.2.
  const double easy = NearestMeanAccuracy(MakeSyntheticDataset({.n = 2000, .seed = 1}));
  EXPECT_GT(easy, 0.98);  // measured 1.000
  // Still well above chance (0.1) at noise 0.5, 28x28 like Fashion-MNIST.
  const double noisy = NearestMeanAccuracy(
      MakeSyntheticDataset({.n = 2000, .height = 28, .width = 28, .seed = 2, .noise = 0.5f}));
  EXPECT_GT(noisy, 0.9);  // measured 1.000
  // Overwhelming noise makes it hard: the measure is not trivially high.
  const double drowned = NearestMeanAccuracy(
      MakeSyntheticDataset({.n = 2000, .height = 4, .width = 4, .seed = 3, .noise = 5.0f}));
  EXPECT_LT(drowned, 0.6);  // measured 0.109, chance
}

}  // namespace
}  // namespace tributary
