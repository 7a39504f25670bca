// FedNova: local steps from the fit config, the momentum norm against the paper's closed form and
// a direct sum, the aggregate against a hand computation, and order independence. The modes it
// cannot take: tests/coordinator/strategy_composes_test.cc.
#include "aggregation/fednova.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "aggregation/fedavg.h"
#include "aggregation/strategy_factory.h"
#include "test_util.h"

namespace tributary {
namespace {

using testing::Dense;

TEST(FedNovaTest, LocalStepsFollowTheFitConfig) {
  const LocalSteps two_epochs_of_32{2, 32, 0, 0.0};
  EXPECT_EQ(two_epochs_of_32.StepsFor(64), 4);  // 2 batches an epoch
  EXPECT_EQ(two_epochs_of_32.StepsFor(65), 6);  // the last, partial batch is a step too
  EXPECT_EQ(two_epochs_of_32.StepsFor(1), 2);
  EXPECT_EQ((LocalSteps{10, 64, 25, 0.0}.StepsFor(6000)), 25);  // fit.max_steps caps them
  EXPECT_DOUBLE_EQ(two_epochs_of_32.NormFor(6), 6.0);           // plain SGD: a_i = tau_i
}

// With momentum rho, local SGD's delta is -lr * sum_k a_k g_k with a_k = sum_{j<tau-k} rho^j:
// ||a||_1 summed directly equals the closed form NormFor uses (FedNova's, NIID-Bench's).
TEST(FedNovaTest, TheMomentumNormIsTheSumOfTheStepsCoefficients) {
  for (double rho : {0.5, 0.9}) {
    const LocalSteps local{1, 1, 0, rho};
    for (int64_t tau : {1, 2, 7, 50}) {
      double direct = 0;
      for (int64_t k = 0; k < tau; ++k) {
        double a = 0;
        for (int64_t j = 0; j < tau - k; ++j) a += std::pow(rho, static_cast<double>(j));
        direct += a;
      }
      EXPECT_NEAR(local.NormFor(tau), direct, 1e-9 * direct) << rho << " " << tau;
    }
  }
  EXPECT_DOUBLE_EQ((LocalSteps{1, 1, 0, 0.9}.NormFor(1)), 1.0);
}

// Three clients of 32, 64 and 160 examples, batch 32, one epoch: 1, 2 and 5 steps. Without
// momentum a_i = tau_i; p = (1/8, 2/8, 5/8); tau_eff = 1/8 + 4/8 + 25/8 = 30/8.
TEST(FedNovaTest, OneRoundMatchesAHandComputation) {
  FedNova nova(LocalSteps{1, 32, 0, 0.0});
  ModelWeights global = testing::FlatModel(3, 1.0f);
  const std::vector<float> d1 = {0.8f, 0.0f, -0.4f}, d2 = {0.2f, 0.4f, 0.0f},
                           d3 = {1.0f, -1.0f, 0.5f};
  ASSERT_TRUE(nova.BeginRound(global).ok());
  ASSERT_TRUE(nova.Accumulate(32, Dense(d1)).ok());
  ASSERT_TRUE(nova.Accumulate(64, Dense(d2)).ok());
  ASSERT_TRUE(nova.Accumulate(160, Dense(d3)).ok());
  EXPECT_DOUBLE_EQ(nova.tau_eff(), 30.0 / 8.0);
  Result<ModelWeights> next = nova.Finalize();
  ASSERT_TRUE(next.ok()) << next.status();
  // next = 1 + 30/8 * (1/8 * d1 / 1 + 2/8 * d2 / 2 + 5/8 * d3 / 5)
  for (size_t i = 0; i < 3; ++i) {
    const double want = 1.0 + 30.0 / 8.0 * (d1[i] / 8.0 + d2[i] / 8.0 + d3[i] / 8.0);
    EXPECT_NEAR(next->data()[i], want, 1e-6) << i;
  }
  // FedAvg on the same updates: 1 + (d1 + 2 d2 + 5 d3) / 8, pulled towards the long run's d3.
  FedAvg avg;
  ASSERT_TRUE(avg.BeginRound(global).ok());
  ASSERT_TRUE(avg.Accumulate(32, Dense(d1)).ok());
  ASSERT_TRUE(avg.Accumulate(64, Dense(d2)).ok());
  ASSERT_TRUE(avg.Accumulate(160, Dense(d3)).ok());
  Result<ModelWeights> fedavg = avg.Finalize();
  ASSERT_TRUE(fedavg.ok());
  EXPECT_NEAR(fedavg->data()[1], 1.0 + (2 * 0.4 - 5 * 1.0) / 8.0, 1e-6);
  EXPECT_NEAR(next->data()[1], 1.0 + 30.0 / 8.0 * (0.4 - 1.0) / 8.0, 1e-6);
}

// With momentum 0.9 and server_lr 0.5, against the formula evaluated in double.
TEST(FedNovaTest, MomentumAndServerLearningRateMatchTheFormula) {
  const LocalSteps local{2, 10, 0, 0.9};
  Result<std::unique_ptr<Strategy>> made =
      MakeStrategy("fednova(server_lr=0.5)", StrategyOptions{1.0f, local});
  ASSERT_TRUE(made.ok()) << made.status();
  Strategy& nova = **made;
  EXPECT_EQ(nova.name(), "fednova");
  ModelWeights global = testing::FlatModel(4, 0.25f);
  const std::vector<uint64_t> n = {10, 35, 100};
  const std::vector<std::vector<float>> deltas = {
      {0.1f, 0.2f, -0.3f, 0.0f}, {-0.5f, 0.1f, 0.1f, 0.2f}, {0.3f, 0.3f, -0.1f, -0.9f}};
  ASSERT_TRUE(nova.BeginRound(global).ok());
  for (size_t c = 0; c < 3; ++c) ASSERT_TRUE(nova.Accumulate(n[c], Dense(deltas[c])).ok());
  Result<ModelWeights> next = nova.Finalize();
  ASSERT_TRUE(next.ok());
  double total = 0, tau_eff = 0;
  std::vector<double> a(3);
  for (size_t c = 0; c < 3; ++c) {
    const double tau = 2.0 * std::ceil(static_cast<double>(n[c]) / 10.0);  // 2, 8, 20 steps
    a[c] = (tau - 0.9 * (1 - std::pow(0.9, tau)) / 0.1) / 0.1;
    total += static_cast<double>(n[c]);
  }
  for (size_t c = 0; c < 3; ++c) tau_eff += static_cast<double>(n[c]) / total * a[c];
  for (size_t i = 0; i < 4; ++i) {
    double mean = 0;
    for (size_t c = 0; c < 3; ++c) mean += static_cast<double>(n[c]) / total * deltas[c][i] / a[c];
    EXPECT_NEAR(next->data()[i], 0.25 + 0.5 * tau_eff * mean, 1e-6) << i;
  }
}

// A weight standing for more local steps than the exact sum of norms holds is refused before it
// is folded; a momentum of 1 (no finite norm) is refused when the rule is made.
TEST(FedNovaTest, ImpossibleLocalRunsAreRefused) {
  FedNova nova(LocalSteps{10000, 1, 0, 0.0});
  UpdateStats stats;
  stats.max_abs = 0.1;
  EXPECT_TRUE(nova.CheckUpdate(stats, 1000).ok());
  Status s = nova.CheckUpdate(stats, uint64_t{1} << 30);  // 2^30 examples x 10,000 epochs
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("local steps"), std::string::npos) << s.message();
  Result<std::unique_ptr<Strategy>> bad =
      MakeStrategy("fednova", StrategyOptions{1.0f, LocalSteps{1, 32, 0, 1.0}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("fit.momentum"), std::string::npos);
}

TEST(FedNovaTest, TheResultDoesNotDependOnArrivalOrder) {
  const size_t dim = 1000;
  std::vector<std::vector<float>> deltas(6, std::vector<float>(dim));
  for (size_t c = 0; c < deltas.size(); ++c)
    for (size_t i = 0; i < dim; ++i)
      deltas[c][i] = std::sin(static_cast<float>(c * 131 + i)) * 0.01f;
  const std::vector<uint64_t> n = {7, 700, 64, 33, 1000, 2};
  const auto run = [&](std::vector<size_t> order) {
    FedNova nova(LocalSteps{3, 16, 0, 0.5});
    EXPECT_TRUE(nova.BeginRound(testing::FlatModel(dim, 0.5f)).ok());
    for (size_t c : order) EXPECT_TRUE(nova.Accumulate(n[c], Dense(deltas[c])).ok());
    return nova.Finalize()->content_hash();
  };
  std::vector<size_t> order(6);
  std::iota(order.begin(), order.end(), 0u);
  const uint64_t first = run(order);
  std::reverse(order.begin(), order.end());
  EXPECT_EQ(run(order), first);
  std::swap(order[1], order[4]);
  EXPECT_EQ(run(order), first);
}

}  // namespace
}  // namespace tributary
