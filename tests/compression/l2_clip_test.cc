// The one L2 clip (compression/l2_clip.h): its norm, the factor, and what it refuses.
#include "compression/l2_clip.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace tributary {
namespace {

TEST(L2ClipTest, TheNormIsTheEuclideanNorm) {
  std::vector<float> v = {3.0f, -4.0f};
  EXPECT_EQ(*L2Norm(v), 5.0);
  std::vector<float> ones(10'000, 0.5f);
  EXPECT_EQ(*L2Norm(ones), 50.0);
  // A finite float squared stays finite in double: the largest floats have a finite norm.
  std::vector<float> big(4, std::numeric_limits<float>::max());
  Result<double> n = L2Norm(big);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_DOUBLE_EQ(*n, 2.0 * static_cast<double>(std::numeric_limits<float>::max()));
}

TEST(L2ClipTest, ClipsToTheBoundWithTheFloatFactorOfBoundOverNorm) {
  std::vector<float> v = {3.0f, -4.0f, 0.0f};
  Result<L2Clip> c = ClipL2(v, 1.0);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->clipped);
  EXPECT_EQ(c->norm, 5.0);
  EXPECT_EQ(c->factor, static_cast<float>(1.0 / 5.0));
  EXPECT_EQ(v[0], 3.0f * static_cast<float>(0.2));
  EXPECT_EQ(v[1], -4.0f * static_cast<float>(0.2));
  EXPECT_EQ(v[2], 0.0f);
  EXPECT_NEAR(*L2Norm(v), 1.0, 1e-7);

  // A large update: the clipped norm is the bound up to float rounding.
  std::vector<float> w(100'000);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(0.1f * static_cast<float>(i)) * 3.0f;
  c = ClipL2(w, 2.5);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->clipped);
  EXPECT_GT(c->norm, 2.5);
  EXPECT_NEAR(*L2Norm(w), 2.5, 2.5 * 1e-6);
}

TEST(L2ClipTest, AtOrBelowTheBoundNothingChanges) {
  std::vector<float> v = {3.0f, 4.0f};
  Result<L2Clip> c = ClipL2(v, 5.0);  // exactly at the bound
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->clipped);
  EXPECT_EQ(c->factor, 1.0f);
  EXPECT_EQ(v, (std::vector<float>{3.0f, 4.0f}));
  c = ClipL2(v, 1e6);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->clipped);
}

TEST(L2ClipTest, TheZeroVectorHasNormZeroAndIsNotClipped) {
  std::vector<float> z(17, 0.0f);
  Result<L2Clip> c = ClipL2(z, 1e-6);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->norm, 0.0);
  EXPECT_FALSE(c->clipped);
  EXPECT_EQ(c->factor, 1.0f);
  EXPECT_EQ(z, std::vector<float>(17, 0.0f));
  std::vector<float> empty;
  EXPECT_EQ(ClipL2(empty, 1.0)->norm, 0.0);
}

TEST(L2ClipTest, NanAndInfinityAreRefusedAndLeaveTheValuesAlone) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    std::vector<float> v = {1.0f, bad, 2.0f};
    const std::vector<float> before = v;
    Result<L2Clip> c = ClipL2(v, 0.5);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find("not finite"), std::string::npos) << c.status();
    EXPECT_EQ(std::memcmp(v.data(), before.data(), v.size() * sizeof(float)), 0);
    EXPECT_FALSE(L2Norm(v).ok());
  }
}

TEST(L2ClipTest, ABoundThatIsNotAPositiveFiniteNumberIsRefused) {
  std::vector<float> v = {1.0f};
  for (double bound : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN(),
                       std::numeric_limits<double>::infinity()}) {
    Result<L2Clip> c = ClipL2(v, bound);
    EXPECT_FALSE(c.ok()) << bound;
  }
  EXPECT_EQ(v[0], 1.0f);
}

TEST(L2ClipTest, TheLargestMagnitudeIsTheMaxNormAndNanSticks) {
  std::vector<float> v = {0.5f, -7.25f, 3.0f};
  EXPECT_EQ(LInfNorm(v), 7.25);
  EXPECT_EQ(LInfNorm(std::vector<float>{}), 0.0);
  v.insert(v.begin(), std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(LInfNorm(v)));
  v = {1.0f, std::numeric_limits<float>::quiet_NaN(), 9.0f};
  EXPECT_TRUE(std::isnan(LInfNorm(v)));
}

}  // namespace
}  // namespace tributary
