// The in-process simulator with secure aggregation (docs/privacy.md): virtual clients take part
// through SecAggTask exactly as deployed ones do. The sums are exact, so a run is bitwise
// reproducible whatever the thread count; dropouts in the masked-input phase are unmasked; too few
// survivors fail the attempt, which is retried. (sim_demo_test.cc: the demo run.)
#include <gtest/gtest.h>

#include <cmath>

#include "privacy/secagg/int_domain.h"
#include "sim/simulator.h"
#include "sim_test_util.h"

namespace tributary {
namespace {

SimConfig SmallSecure() {
  SimConfig c = testing::SmallSyntheticConfig();
  c.run.round.secagg.enabled = true;
  return c;
}

// Bytes of one client's masked input: the model's values and the weight, sum_bits each.
uint64_t MaskedBytes(uint64_t params, uint64_t clients) {
  IntDomainConfig d;
  d.max_clients = clients;
  const int bits = IntDomain::Create(d)->sum_bits();
  return ((params + 1) * static_cast<uint64_t>(bits) + 7) / 8;
}

TEST(SimSecAggTest, ExactSumsAreReproducibleAcrossThreadCountsAndCloseToPlaintext) {
  SimConfig c = SmallSecure();
  c.threads = 1;
  Result<SimResult> one = testing::RunSimulation(c);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  c.threads = 3;
  Result<SimResult> three = testing::RunSimulation(c);
  ASSERT_TRUE(three.ok()) << three.status().ToString();
  ASSERT_EQ(one->rounds.size(), 4u);
  // The masks are random, but they cancel exactly: the model does not depend on them.
  EXPECT_EQ(one->model_hash, three->model_hash);

  c.run.round.secagg.enabled = false;
  Result<SimResult> plain = testing::RunSimulation(c);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_NEAR(one->rounds.back().test_accuracy, plain->rounds.back().test_accuracy, 0.02);
  // Four rounds of 16-bit quantization (step 2/65535 over clip 1) move no weight far.
  std::span<const float> a = one->final_model.data();
  std::span<const float> b = plain->final_model.data();
  ASSERT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(double{a[i]} - b[i]));
  EXPECT_LT(worst, 2e-3);
  EXPECT_GT(worst, 0.0);  // it did go through the integer domain

  const uint64_t masked = MaskedBytes(one->final_model.size(), 5);
  for (const SimRound& r : one->rounds) {
    EXPECT_EQ(r.secagg_clients, 5);
    EXPECT_EQ(r.completed, 5);
    // Up: five masked inputs (framed), plus keys, shares and unmasking answers.
    EXPECT_GE(r.bytes_up - r.secagg_bytes_up, 5 * masked);
    EXPECT_LT(r.bytes_up - r.secagg_bytes_up, 5 * (masked + 4096));
    EXPECT_GT(r.secagg_bytes_up, 5 * 64u);  // at least two public keys each
    EXPECT_LT(r.secagg_bytes_up, 5 * 8192u);
    EXPECT_GT(r.secagg_bytes_down, 0u);
    EXPECT_GT(r.secagg_client_seconds, 0.0);
    EXPECT_GT(r.secagg_server_seconds, 0.0);
  }
  for (const SimRound& r : plain->rounds) EXPECT_EQ(r.secagg_clients, 0);
}

TEST(SimSecAggTest, ClientsThatDropAfterSharingAreUnmaskedAndTheRunIsReproducible) {
  SimConfig c = SmallSecure();
  c.run.round.rounds = 5;
  c.run.round.clients_per_round = 8;
  c.run.round.min_completed = 3;
  c.hetero.availability = 0.8;  // some never hear of the round
  c.hetero.dropout = 0.3;       // some leave mid-training, after their keys were shared
  Result<SimResult> r = testing::RunSimulation(c);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->rounds.size(), 5u);
  int64_t dropouts = 0, unavailable = 0, unmasked_rounds = 0;
  for (const SimRound& x : r->rounds) {
    dropouts += x.dropouts;
    unavailable += x.unavailable;
    EXPECT_GE(x.completed, 3);
    // More left the closing (first) attempt than were unreachable: some left after sharing their
    // keys, and the survivors' sum was unmasked without their inputs.
    if (x.attempts == 1 && x.dropped > x.unavailable) ++unmasked_rounds;
  }
  EXPECT_GT(dropouts, 0);
  EXPECT_GT(unmasked_rounds, 0);
  EXPECT_GT(unavailable, 0);
  EXPECT_GT(r->rounds.back().test_accuracy, 0.5);
  Result<SimResult> again = testing::RunSimulation(c);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->model_hash, r->model_hash);
}

TEST(SimSecAggTest, TooFewSurvivorsFailTheAttemptWhichIsRetriedOrEndsTheRunByName) {
  SimConfig c = SmallSecure();
  c.run.round.rounds = 2;
  c.run.round.clients_per_round = 6;
  c.run.round.secagg.min_clients = 5;
  c.hetero.availability = 0.5;  // 5 or more of 6 reachable 11% of the time
  c.run.round.max_round_attempts = 60;
  Result<SimResult> r = testing::RunSimulation(c);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  int64_t attempts = 0;
  for (const SimRound& x : r->rounds) {
    attempts += x.attempts;
    EXPECT_GE(x.completed, 5);
  }
  EXPECT_GT(attempts, 2);

  c.hetero.availability = 0.2;
  c.run.round.max_round_attempts = 3;
  Result<SimResult> failed = testing::RunSimulation(c);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("secure aggregation"), std::string::npos)
      << failed.status().ToString();
}

}  // namespace
}  // namespace tributary
