// Feature-noise skew (NIID-Bench): the spec's grammar, each client's level, and the noise itself
// (its standard deviation per client, its determinism per example).
#include "train/data/feature_noise.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/rng.h"
#include "train/data/partition.h"

namespace tributary {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// n 8x8 images of uniform [0, 1) pixels, labels i mod 10.
Dataset Images(int64_t n) {
  Dataset d;
  d.height = d.width = 8;
  d.images.resize(static_cast<size_t>(n * 64));
  Rng rng(11);
  for (float& x : d.images) x = rng.UniformFloat();
  for (int64_t i = 0; i < n; ++i) d.labels.push_back(static_cast<uint8_t>(i % 10));
  return d;
}

// Mean and standard deviation of noisy - clean over every feature.
std::pair<double, double> NoiseMoments(const Dataset& noisy, const Dataset& clean) {
  double sum = 0, sum_sq = 0;
  for (size_t i = 0; i < clean.images.size(); ++i) {
    const double e = static_cast<double>(noisy.images[i]) - clean.images[i];
    sum += e;
    sum_sq += e * e;
  }
  const double n = static_cast<double>(clean.images.size());
  return {sum / n, std::sqrt(sum_sq / n - (sum / n) * (sum / n))};
}

TEST(FeatureNoiseTest, SpecsSplitIntoPartitionAndSigma) {
  Result<FeatureNoiseSpec> s = SplitFeatureNoise("dirichlet:0.5+noise:0.1");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->base, "dirichlet:0.5");
  EXPECT_DOUBLE_EQ(s->sigma, 0.1);
  s = SplitFeatureNoise("noise:0.25");  // NIID-Bench's setting: a homogeneous split, then noise
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->base, "iid");
  EXPECT_DOUBLE_EQ(s->sigma, 0.25);
  s = SplitFeatureNoise("shards:2");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->base, "shards:2");
  EXPECT_EQ(s->sigma, 0.0);
  for (const char* bad :
       {"iid+noise:", "iid+noise:-0.1", "iid+noise:abc", "noise:inf", "iid+noise:0.1x"}) {
    s = SplitFeatureNoise(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.status().message(),
                AllOf(HasSubstr(std::string("'") + bad + "'"), HasSubstr("noise:SIGMA")));
  }
}

// NIID-Bench's levels: sigma * i / (N - 1), client 0 clean and the last one sigma.
TEST(FeatureNoiseTest, LevelsRiseLinearlyToSigmaAtTheLastClient) {
  EXPECT_EQ(FeatureNoiseLevel(0.1, 0, 10), 0.0);
  EXPECT_DOUBLE_EQ(FeatureNoiseLevel(0.1, 9, 10), 0.1);
  EXPECT_DOUBLE_EQ(FeatureNoiseLevel(0.1, 3, 10), 0.1 / 9 * 3);
  EXPECT_DOUBLE_EQ(FeatureNoiseLevel(0.1, 0, 1), 0.1);
  EXPECT_EQ(FeatureNoiseLevel(0.0, 5, 10), 0.0);
}

TEST(FeatureNoiseTest, NoiseHasTheLevelAsStandardDeviationAndIsFixedPerExample) {
  const Dataset all = Images(400);
  std::vector<uint32_t> idx(400);
  std::iota(idx.begin(), idx.end(), 0u);
  for (double level : {0.05, 0.3}) {
    Dataset noisy = all;
    ASSERT_TRUE(AddFeatureNoise(noisy, idx, level, 7, 3).ok());
    const auto [mean, sd] = NoiseMoments(noisy, all);
    // 25,600 draws: the sample standard deviation is within 1.5%, the mean within 3 / sqrt(n).
    EXPECT_NEAR(sd, level, 0.015 * level) << level;
    EXPECT_NEAR(mean, 0.0, 3 * level / std::sqrt(25600.0)) << level;
  }
  // Bitwise the same for the same (seed, client, example), whatever else the data set holds.
  Dataset a = all, b = all.Subset(std::vector<uint32_t>{17, 5});
  ASSERT_TRUE(AddFeatureNoise(a, idx, 0.2, 7, 3).ok());
  ASSERT_TRUE(AddFeatureNoise(b, std::vector<uint32_t>{17, 5}, 0.2, 7, 3).ok());
  EXPECT_TRUE(std::equal(b.image(0), b.image(0) + 64, a.image(17)));
  EXPECT_TRUE(std::equal(b.image(1), b.image(1) + 64, a.image(5)));
  // Another client, or another seed: other noise.
  Dataset c = all, d = all;
  ASSERT_TRUE(AddFeatureNoise(c, idx, 0.2, 7, 4).ok());
  ASSERT_TRUE(AddFeatureNoise(d, idx, 0.2, 8, 3).ok());
  EXPECT_NE(c.images, a.images);
  EXPECT_NE(d.images, a.images);
  // Level 0 changes nothing; indices that do not match the data set are refused.
  Dataset e = all;
  ASSERT_TRUE(AddFeatureNoise(e, idx, 0.0, 7, 3).ok());
  EXPECT_EQ(e.images, all.images);
  Status s = AddFeatureNoise(e, std::vector<uint32_t>{1, 2}, 0.1, 7, 3);
  EXPECT_THAT(s.message(), HasSubstr("2 example indices for a data set of 400"));
}

// The noise changes images, not who holds which example.
TEST(FeatureNoiseTest, PartitionsIgnoreTheNoisePart) {
  std::vector<uint8_t> labels(2000);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<uint8_t>(i % 10);
  const auto parts = [&](const char* spec) {
    Result<Partition> p = MakePartition(spec, labels, 10, 10, 5);
    EXPECT_TRUE(p.ok()) << spec << ": " << p.status();
    return p.ok() ? *p : Partition{};
  };
  EXPECT_EQ(parts("dirichlet:0.5+noise:0.1"), parts("dirichlet:0.5"));
  EXPECT_EQ(parts("labels:2+noise:0.3"), parts("labels:2"));
  EXPECT_EQ(parts("noise:0.1"), parts("iid"));
  Result<Partition> bad = MakePartition("iid+noise:-1", labels, 10, 10, 5);
  EXPECT_THAT(bad.status().message(), HasSubstr("'iid+noise:-1'"));
  bad = MakePartition("dirichlet:x+noise:0.1", labels, 10, 10, 5);
  EXPECT_THAT(bad.status().message(),
              AllOf(HasSubstr("'dirichlet:x+noise:0.1'"), HasSubstr("expected dirichlet:ALPHA")));
}

}  // namespace
}  // namespace tributary
