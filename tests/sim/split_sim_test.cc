// Split learning in the simulator (split.mode; docs/split.md): the virtual clients train the device
// part through the run's real SplitServer, every batch through the wire format. SFLV1 is FedAvg
// computed in two places, so its model is FedAvg's up to float rounding; both modes give the same
// bits whatever the thread count; every batch's round trip is charged on the client's link, so a
// slow link costs the split run more than FedAvg and a fast one less; and the runs it cannot
// carry are refused naming why.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sim_test_util.h"

namespace tributary {
namespace {

SimConfig SplitSimConfig() {
  SimConfig c = testing::SmallSyntheticConfig();
  c.data.num_clients = 6;
  c.run.round.clients_per_round = 3;
  c.run.round.rounds = 3;
  c.run.round.fit.epochs = 1;
  c.run.round.fit.momentum = 0.0f;  // FedAvg's server keeps no momentum either
  return c;
}

double SplitModelDiff(const ModelWeights& a, const ModelWeights& b) {
  double d = 0.0;
  for (size_t i = 0; i < a.size(); ++i)
    d = std::max(d, static_cast<double>(std::fabs(a.data()[i] - b.data()[i])));
  return d;
}

TEST(SplitSimTest, Sflv1IsFedAvgComputedInTwoPlaces) {
  TRIB_SKIP_UNDER_TSAN("SplitSimTest.BothModesGiveTheSameBitsWhateverTheThreadCount");
  SimConfig c = SplitSimConfig();
  const SimResult fedavg = testing::RunSimulationOrFail(c);
  c.run.round.split.mode = "sflv1";
  const SimResult split = testing::RunSimulationOrFail(c);
  ASSERT_EQ(split.rounds.size(), 3u);
  ASSERT_EQ(split.final_model.size(), fedavg.final_model.size());
  const double diff = SplitModelDiff(split.final_model, fedavg.final_model);
  std::printf("SFLV1 against FedAvg after 3 rounds: max |difference| = %.3g\n", diff);
  EXPECT_LT(diff, 1e-5);
  EXPECT_GT(SplitModelDiff(split.final_model, *InitWeights(*ModelSpecByName("mlp", {8, 8, 1}), 1)),
            1e-2);
  for (size_t i = 0; i < 3; ++i) {
    const SimRound& r = split.rounds[i];
    EXPECT_EQ(r.accepted, 3);
    // 3 clients of the 2000 examples' Dirichlet shares (6 shares), batches of at most 16 samples
    // of 200 activations: at least a batch per 16 samples, each at most 12.8 KB and a header.
    EXPECT_GE(r.split_batches, 3u);
    EXPECT_LE(r.split_batches, 2000u / 16 + 3);
    const double per_batch =
        static_cast<double>(r.split_bytes_up) / static_cast<double>(r.split_batches);
    EXPECT_GT(per_batch, 800.0);  // more than one sample's 200 floats
    EXPECT_LT(per_batch, 16 * 200 * 4 + 512.0);
    EXPECT_GT(r.split_batches * 16, 2000u / 6);  // about a third of the set: 3 of 6 shares
    EXPECT_NEAR(static_cast<double>(r.split_bytes_down), static_cast<double>(r.split_bytes_up),
                0.01 * r.split_bytes_up);
    EXPECT_GT(r.bytes_up, r.split_bytes_up);  // the device part's update too
    EXPECT_GT(r.split_server_seconds, 0.0);   // the server part's compute, from RoundClosed
    EXPECT_EQ(fedavg.rounds[i].split_batches, 0u);
  }
}

TEST(SplitSimTest, BothModesGiveTheSameBitsWhateverTheThreadCount) {
  for (const char* mode : {"sflv1", "sflv2"}) {
    SCOPED_TRACE(mode);
    SimConfig c = SplitSimConfig();
    c.run.round.split.mode = mode;
    std::vector<uint64_t> hashes;
    for (int threads : testing::ThreadCountsToCompare({1, 3})) {
      c.threads = threads;
      hashes.push_back(testing::RunSimulationOrFail(c).model_hash);
    }
    EXPECT_NE(hashes[0], 0u);
    for (uint64_t h : hashes) EXPECT_EQ(h, hashes[0]);
  }
}

TEST(SplitSimTest, EveryBatchPaysTheClientsLinkSoSlowLinksFavourFedAvg) {
  TRIB_SKIP_UNDER_TSAN("SplitSimTest.BothModesGiveTheSameBitsWhateverTheThreadCount");
  // Devices that train the whole model at 300 samples/s. Slow link: 1 Mbps each way, 100 ms
  // latency; fast: 1 Gbps, 1 ms.
  struct Link {
    double mbps, latency_ms;
  };
  double time[2][2];  // [link][fedavg, split]
  const Link links[2] = {{1.0, 100.0}, {1000.0, 1.0}};
  for (int l = 0; l < 2; ++l) {
    for (int s = 0; s < 2; ++s) {
      SimConfig c = SplitSimConfig();
      c.run.round.rounds = 1;
      c.hetero.samples_per_s = 300;
      c.hetero.up_mbps = c.hetero.down_mbps = links[l].mbps;
      c.hetero.latency_ms = links[l].latency_ms;
      if (s == 1) c.run.round.split.mode = "sflv1";
      const SimResult r = testing::RunSimulationOrFail(c);
      ASSERT_EQ(r.rounds.size(), 1u);
      time[l][s] = r.rounds[0].sim_seconds;
    }
  }
  std::printf(
      "simulated round: slow link FedAvg %.2f s, split %.2f s; fast link FedAvg %.3f s, "
      "split %.3f s\n",
      time[0][0], time[0][1], time[1][0], time[1][1]);
  // Slow: about 21 batches x (2 x 100 ms + 2 x 12.8 KB at 1 Mbps) per client: the split loses.
  EXPECT_GT(time[0][1], time[0][0]);
  // Fast: the device computes only the first dense layer's share of the FLOPs: the split wins.
  EXPECT_LT(time[1][1], time[1][0]);
}

// The U-shaped split (mlp cut at 3 and 4: the server holds the second dense layer only, the
// devices the first and the last with the labels): FedAvg computed in three places, the same bits
// on 1 and 3 threads, and each batch charged two round trips (so on a 100 ms link a round takes
// longer than the classic split's).
TEST(SplitSimTest, AUShapedSplitIsFedAvgTooAndPaysTwoRoundTripsABatch) {
  TRIB_SKIP_UNDER_TSAN("SplitSimTest.BothModesGiveTheSameBitsWhateverTheThreadCount");
  SimConfig c = SplitSimConfig();
  const SimResult fedavg = testing::RunSimulationOrFail(c);
  c.run.round.split.mode = "sflv1";
  c.run.round.split.head = 4;
  c.threads = 1;
  const SimResult u = testing::RunSimulationOrFail(c);
  const double diff = SplitModelDiff(u.final_model, fedavg.final_model);
  std::printf("U-shaped SFLV1 against FedAvg after 3 rounds: max |difference| = %.3g\n", diff);
  EXPECT_LT(diff, 1e-5);
  c.threads = 3;
  EXPECT_EQ(testing::RunSimulationOrFail(c).model_hash, u.model_hash);
  for (const SimRound& r : u.rounds) {
    EXPECT_EQ(r.accepted, 3);
    EXPECT_GE(r.split_batches, 3u);
    // Each batch: 200 activations up and the head's 200 gradients up, as many down.
    const double per_batch =
        static_cast<double>(r.split_bytes_up) / static_cast<double>(r.split_batches);
    EXPECT_GT(per_batch, 2 * 800.0);
    EXPECT_LT(per_batch, 2 * (16 * 200 * 4 + 512.0));
  }
  double time[2];
  for (int head : {0, 4}) {
    SimConfig slow = SplitSimConfig();
    slow.run.round.rounds = 1;
    slow.hetero.samples_per_s = 300;
    slow.hetero.up_mbps = slow.hetero.down_mbps = 1000.0;
    slow.hetero.latency_ms = 100.0;
    slow.run.round.split.mode = "sflv1";
    slow.run.round.split.head = head;
    time[head == 0 ? 0 : 1] = testing::RunSimulationOrFail(slow).rounds[0].sim_seconds;
  }
  std::printf("simulated round on a 100 ms link: classic split %.2f s, U-shaped %.2f s\n", time[0],
              time[1]);
  EXPECT_GT(time[1], 1.5 * time[0]);  // twice the latency a batch, about as many bytes
}

TEST(SplitSimTest, RunsItCannotCarryAreRefusedNamingWhy) {
  SimConfig c = SplitSimConfig();
  c.run.round.split.mode = "sflv1";
  c.trainer = "noop";
  Result<SimResult> r = testing::RunSimulation(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("needs the native trainer"), std::string::npos) << r.status();
  c = SplitSimConfig();
  c.run.round.split.mode = "sflv1";
  c.tier.aggregators = 2;
  r = testing::RunSimulation(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("split.mode"), std::string::npos) << r.status();
}

}  // namespace
}  // namespace tributary
