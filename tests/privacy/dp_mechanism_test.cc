// DP-FedAvg's mechanism: the Gaussian noise's distribution, clipping, the released mean, adaptive
// clipping and the accountant's state through a checkpoint.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "compression/update_sink.h"
#include "privacy/dp/dp_aggregator.h"
#include "privacy/dp/gaussian_noise.h"

namespace tributary {
namespace {

DpConfig Config(double z, double clip) {
  DpConfig c;
  c.enabled = true;
  c.noise_multiplier = z;
  c.clip_norm = clip;
  c.delta = 1e-5;
  c.noise_seed = 7;
  return c;
}

DpUpdateWriter Dense(const std::vector<float>& v) {
  return [&v](UpdateSink& sink, float scale) { sink.AddDense(0, v, scale); };
}

TEST(GaussianNoiseTest, DrawsAreStandardNormal) {
  GaussianNoise noise = GaussianNoise::FromSeed(1, 2);
  const int n = 400'000;
  double sum = 0, sq = 0, quad = 0;
  int beyond_2 = 0;
  for (int i = 0; i < n; ++i) {
    const double x = noise.Next();
    sum += x;
    sq += x * x;
    quad += x * x * x * x;
    beyond_2 += std::abs(x) > 2.0;
  }
  const double mean = sum / n, var = sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.01);             // sd of the mean: 1/sqrt(n) = 0.0016
  EXPECT_NEAR(std::sqrt(var), 1.0, 0.005);  // sd of the sd: ~0.0011
  EXPECT_NEAR(quad / n, 3.0, 0.05);         // the normal's fourth moment
  EXPECT_NEAR(beyond_2 / static_cast<double>(n), 0.0455, 0.002);  // P(|Z| > 2)
}

TEST(GaussianNoiseTest, SeededStreamsRepeatAndDiffer) {
  GaussianNoise a = GaussianNoise::FromSeed(5, 1), b = GaussianNoise::FromSeed(5, 1),
                c = GaussianNoise::FromSeed(5, 2);
  for (int i = 0; i < 100; ++i) {
    const double x = a.Next();
    EXPECT_EQ(x, b.Next());
    EXPECT_NE(x, c.Next());
  }
  // The secure generator's streams differ from run to run.
  GaussianNoise s1 = *GaussianNoise::FromSecureRandom(), s2 = *GaussianNoise::FromSecureRandom();
  EXPECT_NE(s1.Next(), s2.Next());
}

TEST(DpAggregatorTest, ClippedNormsNeverExceedTheBoundAndTheMeanIsExact) {
  DpConfig c = Config(0.0, 1.0);  // no noise: the release is the clipped sum over 4
  c.expected_clients = 4;
  auto dp = *DpAggregator::Create(c, 4);
  dp->BeginRound(3);
  const std::vector<float> big{30, 40, 0}, small{0.1f, 0, 0.2f}, edge{0, 1, 0};
  EXPECT_DOUBLE_EQ(*dp->AddUpdate(Dense(big)), 50.0);
  EXPECT_NEAR(*dp->AddUpdate(Dense(small)), std::sqrt(0.05), 1e-7);
  EXPECT_DOUBLE_EQ(*dp->AddUpdate(Dense(edge)), 1.0);
  std::vector<float> out = *dp->Release(1, 0.1);
  EXPECT_NEAR(out[0], (0.6 + 0.1) / 4, 1e-6);
  EXPECT_NEAR(out[1], (0.8 + 1.0) / 4, 1e-6);
  EXPECT_NEAR(out[2], 0.2 / 4, 1e-6);
  EXPECT_EQ(dp->last_round().clipped, 1);             // a norm equal to C is not clipped
  EXPECT_TRUE(std::isinf(dp->last_round().epsilon));  // no noise, no guarantee

  // Whatever the update, what one client adds is at most C in norm.
  auto dp2 = *DpAggregator::Create(c, 4);
  GaussianNoise g = GaussianNoise::FromSeed(3, 3);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> u(50);
    const double scale = std::exp(6.0 * g.Next());
    for (float& v : u) v = static_cast<float>(scale * g.Next());
    dp2->BeginRound(u.size());
    ASSERT_TRUE(dp2->AddUpdate(Dense(u)).ok());
    std::vector<float> one = *dp2->Release(trial + 1, 0.1);
    double sq = 0;
    for (float v : one) sq += 16.0 * v * v;  // undo the division by 4
    EXPECT_LE(std::sqrt(sq), 1.0 + 1e-5) << "trial " << trial << " scale " << scale;
  }
}

TEST(DpAggregatorTest, NoiseStandardDeviationIsZTimesC) {
  // 200,000 coordinates of zero updates: the release is noise / expected, whose empirical
  // standard deviation must be z * C / expected.
  for (double z : {0.5, 1.3}) {
    DpConfig c = Config(z, 2.5);
    c.expected_clients = 10;
    auto dp = *DpAggregator::Create(c, 10);
    const size_t dim = 200'000;
    dp->BeginRound(dim);
    const std::vector<float> zero(dim, 0.0f);
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(dp->AddUpdate(Dense(zero)).ok());
    std::vector<float> out = *dp->Release(1, 0.01);
    double sum = 0, sq = 0;
    for (float v : out) {
      sum += v * 10.0;
      sq += v * 10.0 * v * 10.0;
    }
    const double mean = sum / dim, sd = std::sqrt(sq / dim - mean * mean);
    EXPECT_NEAR(sd / (z * 2.5), 1.0, 0.01) << "z " << z;
    EXPECT_NEAR(mean, 0.0, 5 * z * 2.5 / std::sqrt(dim));
    EXPECT_DOUBLE_EQ(dp->last_round().noise_stddev, z * 2.5);
  }
}

TEST(DpAggregatorTest, AdaptiveClipFollowsTheQuantile) {
  DpConfig c = Config(1.0, 1.0);
  c.adaptive_quantile = 0.5;
  c.expected_clients = 100;
  auto dp = *DpAggregator::Create(c, 100);
  // Every norm is 10, above C: the unclipped fraction is ~0, so C grows by about exp(0.2 * 0.5)
  // a round (the count's noise, sigma_b = 5 over 100 clients, moves that by ~1%).
  const std::vector<float> u{6, 8};
  double prev = dp->clip_norm();
  for (int round = 1; round <= 10; ++round) {
    dp->BeginRound(2);
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(dp->AddUpdate(Dense(u)).ok());
    ASSERT_TRUE(dp->Release(round, 0.1).ok());
    const double ratio = dp->clip_norm() / prev;
    EXPECT_GT(ratio, std::exp(0.2 * 0.5 - 0.2 * 0.2)) << round;
    EXPECT_LT(ratio, std::exp(0.2 * 0.5 + 0.2 * 0.2)) << round;
    prev = dp->clip_norm();
  }
  // Norms far below C: it shrinks towards them.
  const std::vector<float> tiny{0.001f, 0};
  for (int round = 11; round <= 40; ++round) {
    dp->BeginRound(2);
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(dp->AddUpdate(Dense(tiny)).ok());
    ASSERT_TRUE(dp->Release(round, 0.1).ok());
  }
  EXPECT_LT(dp->clip_norm(), prev * std::exp(-0.2 * 0.5 * 30 * 0.8));
  // The update's multiplier gives way to the count's: z_update = (1 - 1/(4*25))^-1/2.
  EXPECT_NEAR(c.UpdateNoiseMultiplier(100), 1.0 / std::sqrt(1.0 - 1.0 / 100.0), 1e-12);
}

TEST(DpAggregatorTest, EpsilonGrowsEachRoundAndSurvivesACheckpoint) {
  DpConfig c = Config(1.1, 1.0);
  c.sampling = "poisson";
  c.population = 1000;
  auto dp = *DpAggregator::Create(c, 10);
  double prev = 0;
  for (int round = 1; round <= 5; ++round) {
    const double predicted = dp->SpentWithOneMore(0.01).epsilon;
    dp->BeginRound(1);
    ASSERT_TRUE(dp->Release(round, 0.01).ok());
    EXPECT_GT(dp->last_round().epsilon, prev);
    EXPECT_DOUBLE_EQ(dp->last_round().epsilon, predicted);
    prev = dp->last_round().epsilon;
  }
  RdpAccountant direct;
  direct.Compose(DpSampling::kPoisson, 0.01, 1.1, 5);
  EXPECT_DOUBLE_EQ(dp->Spent().epsilon, direct.Spent(1e-5).epsilon);

  auto restored = *DpAggregator::Create(c, 10);
  ASSERT_TRUE(restored->LoadState(dp->SaveState()).ok());
  EXPECT_EQ(restored->rounds_charged(), 5);
  EXPECT_DOUBLE_EQ(restored->Spent().epsilon, dp->Spent().epsilon);
  EXPECT_DOUBLE_EQ(restored->clip_norm(), dp->clip_norm());
  Status bad = restored->LoadState(R"({"clip_norm": -1, "steps": 1, "orders": [2], "rdp": [1]})");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("clip_norm"), std::string::npos) << bad.message();
  EXPECT_FALSE(restored->LoadState("not json").ok());
}

TEST(DpConfigTest, RefusalsNameTheKey) {
  DpConfig c = Config(1.0, 1.0);
  c.sampling = "poisson";
  c.population = 0;
  EXPECT_NE(c.Validate(10).message().find("dp.population"), std::string::npos);
  c = Config(1.0, 0.0);
  EXPECT_NE(c.Validate(10).message().find("dp.clip_norm"), std::string::npos);
  c = Config(1.0, 1.0);
  c.adaptive_quantile = 0.5;
  c.adaptive_count_noise = 0.2;  // 2 * 0.2 < z = 1: the count alone would spend the budget
  EXPECT_NE(c.Validate(10).message().find("dp.adaptive_count_noise"), std::string::npos);
  c = Config(1.0, 1.0);
  c.delta = 0;
  EXPECT_NE(c.Validate(10).message().find("dp.delta"), std::string::npos);
  c.population = 3000;
  EXPECT_TRUE(c.Validate(10).ok());
  EXPECT_NEAR(c.EffectiveDelta(), std::pow(3000.0, -1.1), 1e-15);
}

}  // namespace
}  // namespace tributary
