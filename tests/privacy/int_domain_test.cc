#include "privacy/secagg/int_domain.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace tributary {
namespace {

TEST(IntDomainTest, SumBitsCoverTheLargestSumAndRefuseWhatCannotFit) {
  IntDomainConfig c;
  c.quant_bits = 8;
  c.max_weight = 1000;
  c.max_clients = 100;
  IntDomain d = *IntDomain::Create(c);
  // 100 * 1000 * 255 = 25,500,000 < 2^25.
  EXPECT_EQ(d.sum_bits(), 25);
  EXPECT_EQ(d.modulus_mask(), (uint64_t{1} << 25) - 1);
  c.quant_bits = 24;
  c.max_weight = uint64_t{1} << 32;
  c.max_clients = uint64_t{1} << 24;
  Result<IntDomain> too_big = IntDomain::Create(c);
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.status().message().find("62"), std::string::npos) << too_big.status();
  c = IntDomainConfig{};
  c.clip = 0.0f;
  EXPECT_NE(IntDomain::Create(c).status().message().find("secagg.clip"), std::string::npos);
  c = IntDomainConfig{};
  c.quant_bits = 25;
  EXPECT_NE(IntDomain::Create(c).status().message().find("secagg.quant_bits"), std::string::npos);
}

TEST(IntDomainTest, TheLargestInputsOfEveryClientSumWithoutWrapping) {
  IntDomainConfig c;
  c.quant_bits = 4;
  c.max_weight = 7;
  c.max_clients = 9;
  IntDomain d = *IntDomain::Create(c);
  std::vector<uint64_t> sum(3, 0);
  for (int i = 0; i < 9; ++i) {
    std::vector<uint64_t> e = d.Encode(std::vector<float>{5.0f, -5.0f}, d.Weight(100), i);
    for (size_t j = 0; j < 3; ++j) sum[j] = (sum[j] + e[j]) & d.modulus_mask();
  }
  EXPECT_EQ(sum[0], 9u * 7u * 15u);
  EXPECT_EQ(sum[1], 0u);
  EXPECT_EQ(sum[2], 63u);
  std::vector<float> mean = *d.Decode(sum);
  EXPECT_FLOAT_EQ(mean[0], 1.0f);  // clipped
  EXPECT_FLOAT_EQ(mean[1], -1.0f);
}

// The weighted mean comes back within one level spacing, and unbiased: over many clients the
// error shrinks well below a level.
TEST(IntDomainTest, DecodedMeanIsWithinTheBoundAndUnbiased) {
  IntDomainConfig c;
  c.clip = 0.5f;
  c.quant_bits = 8;
  c.max_weight = 1 << 12;
  c.max_clients = 200;
  IntDomain d = *IntDomain::Create(c);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> val(-0.5f, 0.5f);
  std::uniform_int_distribution<uint64_t> ex(1, 5000);
  const size_t n = 200, dim = 500;
  std::vector<uint64_t> sum(dim + 1, 0);
  std::vector<double> exact(dim, 0.0);
  double total = 0;
  for (size_t k = 0; k < n; ++k) {
    std::vector<float> x(dim);
    for (float& v : x) v = val(rng);
    const uint64_t w = d.Weight(ex(rng));
    total += static_cast<double>(w);
    for (size_t i = 0; i < dim; ++i) exact[i] += static_cast<double>(w) * x[i];
    std::vector<uint64_t> e = d.Encode(x, w, k * 7919);
    for (size_t i = 0; i <= dim; ++i) sum[i] = (sum[i] + e[i]) & d.modulus_mask();
  }
  std::vector<float> mean = *d.Decode(sum);
  double worst = 0, avg = 0;
  for (size_t i = 0; i < dim; ++i) {
    const double err = std::fabs(mean[i] - exact[i] / total);
    worst = std::max(worst, err);
    avg += err / dim;
  }
  EXPECT_LT(worst, d.step());    // the bound
  EXPECT_LT(avg, d.step() / 4);  // and far inside it: the errors average out
}

TEST(IntDomainTest, ADecodedSumWithoutWeightIsRefused) {
  IntDomain d = *IntDomain::Create(IntDomainConfig{});
  std::vector<uint64_t> sum(4, 0);
  EXPECT_EQ(d.Decode(sum).status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tributary
