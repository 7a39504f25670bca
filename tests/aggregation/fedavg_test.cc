#include "aggregation/fedavg.h"

#include <gtest/gtest.h>

#include <cmath>

#include "compression/dense_codec.h"
#include "core/rng.h"
#include "test_util.h"

namespace tributary {
namespace {

using testing::Dense;

ModelWeights Model(size_t n) { return testing::FlatModel(n); }

TEST(FedAvgTest, WeightedMeanOfDeltasMatchesDoubleReference) {
  const size_t n = 5000;
  ModelWeights global = Model(n);
  Rng rng(3);
  for (float& v : global.data()) v = static_cast<float>(rng.Normal());
  std::vector<std::vector<float>> deltas(12, std::vector<float>(n));
  std::vector<double> weights;
  for (auto& d : deltas) {
    for (float& v : d) v = static_cast<float>(rng.Normal() * 0.01);
    weights.push_back(1 + static_cast<double>(rng.UniformInt(1000)));
  }
  FedAvg avg;
  ASSERT_TRUE(avg.BeginRound(global).ok());
  for (size_t c = 0; c < deltas.size(); ++c)
    ASSERT_TRUE(avg.Accumulate(weights[c], Dense(deltas[c])).ok());
  EXPECT_EQ(avg.num_accumulated(), 12u);
  auto next = avg.Finalize();
  ASSERT_TRUE(next.ok()) << next.status();
  double total = 0;
  for (double w : weights) total += w;
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    double ref = global.data()[i];
    for (size_t c = 0; c < deltas.size(); ++c) ref += weights[c] * deltas[c][i] / total;
    worst = std::max(worst, std::abs(ref - next->data()[i]));
  }
  EXPECT_LT(worst, 1e-6);  // float32 rounding of the result, not accumulation error
}

TEST(FedAvgTest, ResultDoesNotDependOnArrivalOrder) {
  const size_t n = 2000;
  ModelWeights global = Model(n);
  std::vector<std::vector<float>> deltas(5, std::vector<float>(n));
  Rng rng(9);
  for (auto& d : deltas)
    for (float& v : d) v = static_cast<float>(rng.Normal() * 0.1);
  auto run = [&](std::vector<int> order) {
    FedAvg avg;
    EXPECT_TRUE(avg.BeginRound(global).ok());
    for (int c : order) EXPECT_TRUE(avg.Accumulate(100.0 + c * 37, Dense(deltas[c])).ok());
    return avg.Finalize()->content_hash();
  };
  EXPECT_EQ(run({0, 1, 2, 3, 4}), run({4, 2, 0, 3, 1}));
}

TEST(FedAvgTest, StateMachineErrors) {
  FedAvg avg;
  std::vector<float> d(4, 1.0f);
  EXPECT_EQ(avg.Accumulate(1.0, Dense(d)).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(avg.BeginRound(Model(4)).ok());
  EXPECT_EQ(avg.Finalize().status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(avg.Accumulate(0.0, Dense(d)).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(avg.Accumulate(2.0, Dense(d)).ok());
  auto next = avg.Finalize();
  ASSERT_TRUE(next.ok());
  EXPECT_FLOAT_EQ(next->data()[0], 1.0f);
  // A new round starts from zero.
  ASSERT_TRUE(avg.BeginRound(*next).ok());
  EXPECT_EQ(avg.num_accumulated(), 0u);
}

TEST(FedAvgTest, ServerLearningRateScalesTheStep) {
  FedAvg avg(0.5f);
  ModelWeights g = Model(3);
  std::vector<float> d = {2.0f, -4.0f, 0.0f};
  ASSERT_TRUE(avg.BeginRound(g).ok());
  ASSERT_TRUE(avg.Accumulate(10, Dense(d)).ok());
  auto next = *avg.Finalize();
  EXPECT_FLOAT_EQ(next.data()[0], 1.0f);
  EXPECT_FLOAT_EQ(next.data()[1], -2.0f);
}

}  // namespace
}  // namespace tributary
