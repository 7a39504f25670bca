#include "core/rng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

namespace tributary {
namespace {

TEST(RngTest, SameSeedSameSequence) {
  Rng a(42), b(42), c(43);
  for (int i = 0; i < 100; ++i) {
    uint64_t x = a.Next();
    EXPECT_EQ(x, b.Next());
    EXPECT_NE(x, c.Next());
  }
}

TEST(RngTest, StreamsAreDistinctAndStable) {
  EXPECT_EQ(DeriveSeed(7, {1, 2}), DeriveSeed(7, {1, 2}));
  EXPECT_NE(DeriveSeed(7, {1, 2}), DeriveSeed(7, {2, 1}));
  EXPECT_NE(DeriveSeed(7, {1}), DeriveSeed(7, {1, 0}));
  EXPECT_NE(DeriveSeed(7, {1, 2}), DeriveSeed(8, {1, 2}));
}

TEST(RngTest, DistributionMoments) {
  Rng r(1);
  const int n = 200000;
  double su = 0, sn = 0, sn2 = 0, sg = 0;
  std::vector<int> hist(10, 0);
  for (int i = 0; i < n; ++i) {
    su += r.Uniform();
    double z = r.Normal();
    sn += z;
    sn2 += z * z;
    sg += r.Gamma(0.5);
    hist[r.UniformInt(10)]++;
  }
  EXPECT_NEAR(su / n, 0.5, 0.01);
  EXPECT_NEAR(sn / n, 0.0, 0.01);
  EXPECT_NEAR(sn2 / n, 1.0, 0.02);
  EXPECT_NEAR(sg / n, 0.5, 0.01);  // mean of Gamma(k, 1) is k
  for (int h : hist) EXPECT_NEAR(h, n / 10, n / 100);
}

TEST(RngTest, StateRestores) {
  Rng r(9);
  r.Next();
  auto st = r.state();
  uint64_t x = r.Next();
  Rng q(0);
  q.set_state(st);
  EXPECT_EQ(q.Next(), x);
}

TEST(RngTest, ShuffleIsPermutation) {
  std::vector<int> v(100);
  std::iota(v.begin(), v.end(), 0);
  Rng r(3);
  r.Shuffle(std::span<int>(v));
  std::vector<int> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(sorted[i], i);
  EXPECT_NE(v[0] * 1000 + v[1], 1);  // not the identity prefix
}

}  // namespace
}  // namespace tributary
