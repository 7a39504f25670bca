// The simulator's model of the aggregation tier (sim/sim_tier.h): through simulated aggregators
// the run gives bitwise the one-coordinator model (plain and with error feedback), each round pays
// the aggregators' link both ways, with over-selection each group sends its share of the quota
// without waiting for its slowest member, and the runs the tier cannot carry are refused naming
// why.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "../client/temp_dir.h"

#include "sim_test_util.h"

namespace tributary {
namespace {

// 12 clients, 6 per round (every selected update folded), 3 rounds, two speeds: groups of 2 per
// aggregator for 3 aggregators.
SimConfig TierSimConfig() {
  SimConfig c = testing::SmallSyntheticConfig();
  c.data.num_clients = 12;
  c.run.round.clients_per_round = 6;
  c.run.round.rounds = 3;
  c.run.round.fit.epochs = 1;
  c.hetero.speed_tiers = "fast:0.5:4000,slow:0.5:1000";
  return c;
}

TEST(TierSimTest, ThroughAggregatorsTheModelIsBitwiseTheOneCoordinatorModel) {
  // Under ThreadSanitizer the compressed codec only: the same threads, half the time.
  const std::vector<const char*> codecs = testing::kUnderThreadSanitizer
                                              ? std::vector<const char*>{"topk(0.1)+q8"}
                                              : std::vector<const char*>{"dense", "topk(0.1)+q8"};
  for (const char* codec : codecs) {
    SCOPED_TRACE(codec);
    SimConfig c = TierSimConfig();
    c.run.round.codec = codec;
    const SimResult one = testing::RunSimulationOrFail(c);
    c.tier.aggregators = 3;
    const SimResult tier = testing::RunSimulationOrFail(c);
    ASSERT_EQ(one.rounds.size(), 3u);
    ASSERT_EQ(tier.rounds.size(), 3u);
    EXPECT_EQ(tier.model_hash, one.model_hash);
    for (size_t i = 0; i < tier.rounds.size(); ++i) {
      const SimRound &a = one.rounds[i], &t = tier.rounds[i];
      SCOPED_TRACE(i);
      EXPECT_EQ(t.accepted, 6);
      EXPECT_EQ(t.accepted, a.accepted);
      EXPECT_EQ(t.bytes_up, a.bytes_up) << "the clients send the same updates, to aggregators";
      EXPECT_DOUBLE_EQ(t.train_loss, a.train_loss);
      EXPECT_FALSE(a.tier);
      EXPECT_EQ(a.tier_bytes_up, 0u);
      EXPECT_TRUE(t.tier);
      // Down: each aggregator holding clients of the round gets one copy of the task (the model
      // and its member list); up: each sends at least one partial sum of 8-byte coordinates.
      EXPECT_GE(t.tier_bytes_down, a.bytes_down / 6);
      EXPECT_LE(t.tier_bytes_down, 3 * (a.bytes_down / 6 + 4096))
          << "at most one task per aggregator, not one per client";
      EXPECT_GT(t.aggregator_seconds, 0.0);
      EXPECT_GT(t.coordinator_update_seconds, 0.0);
    }
  }
}

TEST(TierSimTest, EachRoundPaysTheAggregatorsLinkBothWays) {
  TRIB_SKIP_UNDER_TSAN("TierSimTest.ThroughAggregatorsTheModelIsBitwiseTheOneCoordinatorModel");
  SimConfig c = TierSimConfig();
  const SimResult one = testing::RunSimulationOrFail(c);
  c.tier.aggregators = 3;
  c.tier.latency_ms = 250;
  const SimResult slow_hop = testing::RunSimulationOrFail(c);
  ASSERT_EQ(one.rounds.size(), slow_hop.rounds.size());
  for (size_t i = 0; i < one.rounds.size(); ++i) {
    SCOPED_TRACE(i);
    // Every selected client answers, so each group's result leaves with its last member's update:
    // the round ends when the slowest client's group result arrives, the task's hop and the
    // result's hop later than on one coordinator.
    EXPECT_NEAR(slow_hop.rounds[i].sim_seconds, one.rounds[i].sim_seconds + 0.5, 1e-6);
  }
  EXPECT_EQ(slow_hop.model_hash, one.model_hash);

  // A thin link charges the partial sums' bytes too: each result holds 8 bytes per coordinate.
  c.tier.latency_ms = 0;
  c.tier.link_mbps = 1;
  const SimResult thin = testing::RunSimulationOrFail(c);
  ASSERT_EQ(thin.rounds.size(), one.rounds.size());
  for (size_t i = 0; i < one.rounds.size(); ++i) {
    SCOPED_TRACE(i);
    const double up_s = static_cast<double>(thin.rounds[i].tier_bytes_up) / 3 * 8 / 1e6;
    EXPECT_GE(thin.rounds[i].sim_seconds, one.rounds[i].sim_seconds + up_s * 0.99);
  }
}

// With over-selection, one coordinator closes a round at its quota's last update. Through the
// tier each group sends its share of the quota as soon as it is in (GroupShare::Due), so the round
// closes about as early: never before the quota's last update, and much sooner than if every group
// waited for its slowest member (what the aggregators did before: every member's update folded).
TEST(TierSimTest, WithOverSelectionEachGroupSendsItsShareOfTheQuotaWithoutWaitingForItsSlowest) {
  TRIB_SKIP_UNDER_TSAN("TierSimTest.ThroughAggregatorsTheModelIsBitwiseTheOneCoordinatorModel");
  SimConfig c = TierSimConfig();
  c.data.num_clients = 60;
  c.run.round.clients_per_round = 20;
  c.run.round.over_selection = 1.5;  // 30 selected, the round closes at the 20th update
  const size_t rounds = 4;
  c.run.round.rounds = rounds;
  c.hetero.speed_tiers = "fast:0.6:4000,slow:0.4:200";
  const SimResult one = testing::RunSimulationOrFail(c);
  c.tier.aggregators = 3;
  const SimResult tier = testing::RunSimulationOrFail(c);
  c.run.round.over_selection = 1.0;
  c.run.round.clients_per_round = 30;  // the same 30 selected, every update awaited
  const SimResult all = testing::RunSimulationOrFail(c);
  ASSERT_EQ(one.rounds.size(), rounds);
  ASSERT_EQ(tier.rounds.size(), rounds);
  ASSERT_EQ(all.rounds.size(), rounds);
  double one_s = 0, tier_s = 0, all_s = 0;
  for (size_t i = 0; i < one.rounds.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(one.rounds[i].accepted, 20);
    EXPECT_EQ(all.rounds[i].accepted, 30);
    // The coordinator folds whole results: at least its quota, far from all 30.
    EXPECT_GE(tier.rounds[i].accepted, 20);
    EXPECT_LE(tier.rounds[i].accepted, 25);
    EXPECT_GE(tier.rounds[i].sim_seconds, one.rounds[i].sim_seconds - 1e-9);
    one_s += one.rounds[i].sim_seconds;
    tier_s += tier.rounds[i].sim_seconds;
    all_s += all.rounds[i].sim_seconds;
  }
  // A slow client takes 20x a fast one: waiting for every member costs the slow tail.
  EXPECT_LT(tier_s, 0.5 * all_s) << "one " << one_s << " s, tier " << tier_s << " s, all " << all_s;
}

// A run through the tier stopped after round 2 and resumed gives the unbroken run: the model, the
// rounds and the tier's counts (the simulator's state file keeps them).
TEST(TierSimTest, AResumedRunThroughTheTierGivesTheUnbrokenRun) {
  TRIB_SKIP_UNDER_TSAN("TierSimTest.ThroughAggregatorsTheModelIsBitwiseTheOneCoordinatorModel");
  SimConfig c = TierSimConfig();
  c.run.round.rounds = 4;
  c.run.round.over_selection = 1.5;
  c.run.round.codec = "topk(0.1)+q8";
  c.tier.aggregators = 3;
  const SimResult whole = testing::RunSimulationOrFail(c);
  ASSERT_EQ(whole.rounds.size(), 4u);
  testing::TempDir dir;
  SimConfig first = c;
  first.run.checkpoint_dir = dir.path();
  first.run.round.rounds = 2;
  ASSERT_EQ(testing::RunSimulationOrFail(first).rounds.size(), 2u);
  SimConfig rest = c;
  rest.run.checkpoint_dir = dir.path();
  rest.resume = true;
  const SimResult resumed = testing::RunSimulationOrFail(rest);
  ASSERT_EQ(resumed.rounds.size(), 4u);
  EXPECT_EQ(resumed.model_hash, whole.model_hash);
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(resumed.rounds[i].accepted, whole.rounds[i].accepted);
    EXPECT_EQ(resumed.rounds[i].tier_bytes_up, whole.rounds[i].tier_bytes_up);
    EXPECT_EQ(resumed.rounds[i].tier_bytes_down, whole.rounds[i].tier_bytes_down);
    EXPECT_DOUBLE_EQ(resumed.rounds[i].sim_clock, whole.rounds[i].sim_clock);
  }
}

TEST(TierSimTest, RunsTheTierCannotCarryAreRefusedNamingWhy) {
  auto refused = [](SimConfig c) {
    c.tier.aggregators = 2;
    Result<SimResult> r = testing::RunSimulation(c);
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.status().message();
  };
  SimConfig c = TierSimConfig();
  c.run.strategy = "krum(f=1)";
  std::string why = refused(c);
  EXPECT_NE(why.find("tier.aggregators"), std::string::npos) << why;
  EXPECT_NE(why.find("needs each update"), std::string::npos) << why;

  c = TierSimConfig();
  c.run.round.mode = "async";
  why = refused(c);
  EXPECT_NE(why.find("tier.aggregators"), std::string::npos) << why;
  EXPECT_NE(why.find("async"), std::string::npos) << why;

  c = TierSimConfig();
  c.run.round.secagg.enabled = true;
  why = refused(c);
  EXPECT_NE(why.find("secagg"), std::string::npos) << why;

  c = TierSimConfig();
  c.tier.link_mbps = -1;
  c.tier.aggregators = 2;
  const Status bad = c.Validate();
  EXPECT_NE(bad.message().find("tier.link_mbps"), std::string::npos) << bad.ToString();
  c = TierSimConfig();
  c.tier.aggregators = -1;
  EXPECT_NE(c.Validate().message().find("tier.aggregators"), std::string::npos);
}

}  // namespace
}  // namespace tributary
