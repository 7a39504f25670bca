// The simulator with differential privacy (docs/privacy.md): the noise added on the coordinator and
// the noise the clients add under secure aggregation come to the same zC/K on the released mean;
// seeded noise is reproducible across thread counts; epsilon is reported every round and the
// budget ends the run early without failing it.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/simulator.h"
#include "sim_test_util.h"

namespace tributary {
namespace {

SimConfig Private(double z, double clip) {
  SimConfig c = testing::SmallSyntheticConfig();
  c.run.round.dp.enabled = true;
  c.run.round.dp.noise_multiplier = z;
  c.run.round.dp.clip_norm = clip;
  c.run.round.dp.sampling = "fixed";
  c.run.round.dp.noise_seed = 5;
  return c;
}

// The released model minus the initial one, over one round in which no client learned anything
// ("noop" trainer: every update is zero): pure noise.
double NoiseStddevOfOneRound(SimConfig c) {
  c.trainer = "noop";
  c.run.round.rounds = 1;
  DataSplits data = *LoadDataSplits(c.data, true, true);
  std::unique_ptr<Simulator> sim = *Simulator::Create(c, data);
  std::span<const float> b = sim->engine().model().data();
  const std::vector<float> before(b.begin(), b.end());
  Result<SimResult> r = sim->Run();
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return 0;
  std::span<const float> a = r->final_model.data();
  double sq = 0;
  for (size_t i = 0; i < a.size(); ++i) sq += (a[i] - before[i]) * double{a[i] - before[i]};
  return std::sqrt(sq / static_cast<double>(a.size()));
}

TEST(SimDpTest, ServerAndClientNoiseBothReleaseZTimesCOverK) {
  const double z = 1.0, clip = 0.1, k = 5;
  const double server = NoiseStddevOfOneRound(Private(z, clip));
  SimConfig c = Private(z, clip);
  c.run.round.dp.placement = "client";
  c.run.round.secagg.enabled = true;
  const double client = NoiseStddevOfOneRound(c);
  // ~4,000 coordinates: the empirical standard deviation is within a few percent.
  EXPECT_NEAR(server / (z * clip / k), 1.0, 0.05) << server;
  // Each of the 5 clients adds N(0, (zC)^2 / 5): the unmasked sum holds the whole noise.
  EXPECT_NEAR(client / (z * clip / k), 1.0, 0.05) << client;
}

TEST(SimDpTest, SeededNoiseIsReproducibleAndEpsilonIsReportedEachRound) {
  TRIB_SKIP_UNDER_TSAN("SimulatorTest.LearnsAndIsDeterministicAcrossThreadCounts");
  SimConfig c = Private(1.5, 1.0);
  c.run.round.dp.sampling = "poisson";
  c.threads = 1;
  Result<SimResult> one = testing::RunSimulation(c);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  c.threads = 3;
  Result<SimResult> three = testing::RunSimulation(c);
  ASSERT_TRUE(three.ok()) << three.status().ToString();
  EXPECT_EQ(one->model_hash, three->model_hash);
  ASSERT_EQ(one->rounds.size(), 4u);
  // q = 5 / 20 (dp.population defaults to data.num_clients), z = 1.5, delta = 1 / 20^1.1.
  RdpAccountant expect;
  for (const SimRound& r : one->rounds) {
    expect.Compose(DpSampling::kPoisson, 0.25, 1.5);
    ASSERT_TRUE(r.dp);
    EXPECT_DOUBLE_EQ(r.epsilon, expect.Spent(std::pow(20.0, -1.1)).epsilon);
  }
  EXPECT_TRUE(one->stopped.empty());
}

TEST(SimDpTest, TheBudgetEndsTheRunEarlyWithoutFailingIt) {
  SimConfig c = Private(1.5, 1.0);
  c.run.round.rounds = 10;
  RdpAccountant a;
  a.Compose(DpSampling::kFixedSize, 0.25, 0.75, 3);
  c.run.round.dp.target_epsilon = a.Spent(std::pow(20.0, -1.1)).epsilon * 1.0001;
  Result<SimResult> r = testing::RunSimulation(c);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->rounds.size(), 3u);
  EXPECT_NE(r->stopped.find("before round 4"), std::string::npos) << r->stopped;
  EXPECT_LE(r->rounds.back().epsilon, c.run.round.dp.target_epsilon);
}

}  // namespace
}  // namespace tributary
