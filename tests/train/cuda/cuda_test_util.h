// Shared helpers for the CUDA backend tests: the fixture that skips (or, under
// TRIBUTARY_REQUIRE_CUDA=1, fails) without a usable GPU, random data, and NMSE.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <vector>

#include "core/rng.h"
#include "train/cuda/cuda_context.h"
#include "train/device.h"

namespace tributary::cuda::testing {

// The parity tolerance the issue sets for every op: NMSE = |a - ref|^2 / |ref|^2.
inline constexpr double kNmseTolerance = 1e-5;

inline double Nmse(const std::vector<float>& got, const std::vector<float>& ref) {
  EXPECT_EQ(got.size(), ref.size());
  double err = 0.0, norm = 0.0;
  for (size_t i = 0; i < std::min(got.size(), ref.size()); ++i) {
    const double d = static_cast<double>(got[i]) - ref[i];
    err += d * d;
    norm += static_cast<double>(ref[i]) * ref[i];
  }
  return norm > 0.0 ? err / norm : err;
}

inline std::vector<float> RandomVector(size_t n, uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.Normal()) * scale;
  return v;
}

// TRIBUTARY_REQUIRE_CUDA=1 (scripts/gpu-check sets it) turns "no GPU, skip" into a failure, so a
// GPU run cannot pass by skipping everything.
inline bool RequireCuda() {
  const char* v = std::getenv("TRIBUTARY_REQUIRE_CUDA");
  return v != nullptr && v[0] == '1';
}

class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const CudaInfo& info = QueryCuda();
    if (!info.available()) {
      if (RequireCuda())
        FAIL() << "TRIBUTARY_REQUIRE_CUDA=1 but no CUDA device: " << info.unavailable_reason;
      GTEST_SKIP() << "no CUDA device: " << info.unavailable_reason;
    }
    auto ctx = CudaContext::Create(0);
    ASSERT_TRUE(ctx.ok()) << ctx.status();
    ctx_ = std::move(*ctx);
  }
  std::unique_ptr<CudaContext> ctx_;
};

template <typename T>
class CudaParamTest : public CudaTest, public ::testing::WithParamInterface<T> {};

}  // namespace tributary::cuda::testing
