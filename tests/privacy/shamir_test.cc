#include "privacy/secagg/shamir.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

namespace tributary {
namespace {

std::vector<uint8_t> Secret(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> s(n);
  for (uint8_t& b : s) b = static_cast<uint8_t>(rng());
  return s;
}

TEST(FieldTest, ArithmeticModTheMersennePrime) {
  const uint64_t p = kShamirPrime;
  EXPECT_EQ(FieldAdd(p - 1, 1), 0u);
  EXPECT_EQ(FieldSub(0, 1), p - 1);
  EXPECT_EQ(FieldMul(p - 1, p - 1), 1u);          // (-1)^2
  EXPECT_EQ(FieldMul(uint64_t{1} << 60, 2), 1u);  // 2^61 = 1
  std::mt19937_64 rng(5);
  for (int i = 0; i < 1000; ++i) {
    const uint64_t a = rng() % (p - 1) + 1;
    ASSERT_EQ(FieldMul(a, FieldInverse(a)), 1u) << a;
  }
}

TEST(ShamirTest, AnyThresholdSubsetRecoversTheSecretAndFewerDoNot) {
  const std::vector<uint8_t> secret = Secret(32, 1);
  std::vector<uint32_t> xs(9);
  std::iota(xs.begin(), xs.end(), 3u);
  const std::vector<ShamirShare> shares = *ShamirSplit(secret, 5, xs);
  ASSERT_EQ(shares.size(), 9u);
  std::mt19937 rng(2);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<ShamirShare> pick = shares;
    std::shuffle(pick.begin(), pick.end(), rng);
    pick.resize(5 + trial % 5);
    Result<std::vector<uint8_t>> back = ShamirCombine(pick, 5, 32);
    ASSERT_TRUE(back.ok()) << back.status();
    ASSERT_EQ(*back, secret);
  }
  std::vector<ShamirShare> four(shares.begin(), shares.begin() + 4);
  EXPECT_EQ(ShamirCombine(four, 5, 32).status().code(), StatusCode::kFailedPrecondition);
  // Four shares interpolated as if the threshold were 4 give some other value, not the secret
  // (almost always out of range, which is reported as a changed share).
  Result<std::vector<uint8_t>> wrong = ShamirCombine(four, 4, 32);
  EXPECT_TRUE(!wrong.ok() || *wrong != secret);
}

TEST(ShamirTest, SecretsOfEveryLengthAndThresholdOne) {
  for (size_t n : {1u, 6u, 7u, 8u, 31u, 32u, 33u, 255u}) {
    const std::vector<uint8_t> secret = Secret(n, static_cast<uint32_t>(n));
    const std::vector<uint32_t> xs = {1, 2, 3};
    for (size_t t : {1u, 2u, 3u}) {
      const std::vector<ShamirShare> shares = *ShamirSplit(secret, t, xs);
      ASSERT_EQ(*ShamirCombine(shares, t, n), secret) << n << " " << t;
    }
  }
  EXPECT_FALSE(ShamirSplit(std::vector<uint8_t>(256, 1), 2, std::vector<uint32_t>{1, 2}).ok());
  EXPECT_FALSE(ShamirSplit(std::vector<uint8_t>(), 1, std::vector<uint32_t>{1}).ok());
}

TEST(ShamirTest, ChangedSharesAreDetectedWhenMoreThanTheThresholdArrive) {
  const std::vector<uint8_t> secret = Secret(32, 3);
  const std::vector<uint32_t> xs = {1, 2, 3, 4, 5, 6};
  std::vector<ShamirShare> shares = *ShamirSplit(secret, 4, xs);
  shares[5].y[2] = FieldAdd(shares[5].y[2], 1);
  Result<std::vector<uint8_t>> r = ShamirCombine(shares, 4, 32);
  ASSERT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_NE(r.status().message().find("share 6"), std::string::npos) << r.status();
}

TEST(ShamirTest, MalformedSharesAreRefusedByName) {
  const std::vector<uint32_t> xs = {1, 2, 3};
  EXPECT_EQ(ShamirSplit(Secret(32, 4), 2, std::vector<uint32_t>{1, 1, 2}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ShamirSplit(Secret(32, 4), 2, std::vector<uint32_t>{0, 1, 2}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ShamirSplit(Secret(32, 4), 4, xs).status().code(), StatusCode::kInvalidArgument);
  std::vector<ShamirShare> shares = *ShamirSplit(Secret(32, 4), 2, xs);
  shares[1].x = shares[0].x;
  EXPECT_EQ(ShamirCombine(shares, 2, 32).status().code(), StatusCode::kInvalidArgument);
  shares = *ShamirSplit(Secret(32, 4), 2, xs);
  shares[0].y.pop_back();
  EXPECT_EQ(ShamirCombine(shares, 2, 32).status().code(), StatusCode::kInvalidArgument);
  shares = *ShamirSplit(Secret(32, 4), 2, xs);
  shares[0].y[0] = kShamirPrime;
  EXPECT_EQ(ShamirCombine(shares, 2, 32).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tributary
