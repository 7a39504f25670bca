// SCAFFOLD's server side: one round against a hand computation (the model by FedAvg's weights,
// the control variate by 1/N of the summed control deltas), the next round's control variate,
// order independence, the checks on control deltas, and the state a checkpoint keeps. The
// client's rule: tests/client/scaffold_client_test.cc; the modes it cannot take:
// tests/coordinator/strategy_composes_test.cc.
#include "aggregation/scaffold.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "aggregation/strategy_factory.h"
#include "test_util.h"

namespace tributary {
namespace {

using testing::Dense;

struct Update {
  uint64_t weight;
  std::vector<float> dy, dc;
};

Result<ModelWeights> OneRound(Scaffold& s, const ModelWeights& global,
                              const std::vector<Update>& updates) {
  TRIB_RETURN_IF_ERROR(s.BeginRound(global));
  for (const Update& u : updates) {
    TRIB_RETURN_IF_ERROR(s.Accumulate(u.weight, Dense(u.dy)));
    TRIB_RETURN_IF_ERROR(s.AccumulateControl(u.dc));
  }
  return s.Finalize();
}

// Global (1, 2); client A weight 1: dy (2, 0), dc (1, -1); client B weight 3: dy (-2, 4),
// dc (3, 1). x' = x + (1*dy_A + 3*dy_B) / 4 = (1 - 1, 2 + 3) = (0, 5);
// c' = (dc_A + dc_B) / N: N = 4 clients gives (1, 0); N = 0 (the round's 2) gives (2, 0).
TEST(ScaffoldTest, OneRoundMatchesAHandComputation) {
  ModelWeights global = testing::FlatModel(2);
  global.data()[0] = 1.0f;
  global.data()[1] = 2.0f;
  const std::vector<Update> round = {{1, {2.0f, 0.0f}, {1.0f, -1.0f}},
                                     {3, {-2.0f, 4.0f}, {3.0f, 1.0f}}};
  for (const auto& [clients, c0, c1] : {std::tuple{4u, 1.0f, 0.0f}, std::tuple{0u, 2.0f, 0.0f}}) {
    Scaffold s(1.0f, clients);
    ASSERT_TRUE(s.BeginRound(global).ok());
    EXPECT_EQ(s.server_control().size(), 2u);
    EXPECT_EQ(s.server_control()[0], 0.0f);  // c starts at zero
    Result<ModelWeights> next = OneRound(s, global, round);
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    EXPECT_FLOAT_EQ(next->data()[0], 0.0f);
    EXPECT_FLOAT_EQ(next->data()[1], 5.0f);
    // The next round's tasks carry the new c.
    ASSERT_TRUE(s.BeginRound(*next).ok());
    EXPECT_FLOAT_EQ(s.server_control()[0], c0) << clients;
    EXPECT_FLOAT_EQ(s.server_control()[1], c1) << clients;
  }
  // server_lr scales the model step only.
  Scaffold half(0.5f, 4);
  Result<ModelWeights> next = OneRound(half, global, round);
  ASSERT_TRUE(next.ok());
  EXPECT_FLOAT_EQ(next->data()[0], 0.5f);
  EXPECT_FLOAT_EQ(next->data()[1], 3.5f);
  ASSERT_TRUE(half.BeginRound(*next).ok());
  EXPECT_FLOAT_EQ(half.server_control()[0], 1.0f);
}

TEST(ScaffoldTest, TheResultDoesNotDependOnTheOrderUpdatesArriveIn) {
  const size_t n = 1000;
  std::vector<Update> updates;
  for (uint64_t k = 0; k < 7; ++k) {
    Update u{k * 37 + 5, std::vector<float>(n), std::vector<float>(n)};
    for (size_t i = 0; i < n; ++i) {
      u.dy[i] = 0.001f * static_cast<float>((i * 7919 + k * 104729) % 2001) - 1.0f;
      u.dc[i] = 0.01f * static_cast<float>((i * 31 + k * 17) % 301) - 1.5f;
    }
    updates.push_back(std::move(u));
  }
  const ModelWeights global = testing::FlatModel(n, 0.3f);
  std::vector<uint64_t> hashes;
  for (int perm = 0; perm < 3; ++perm) {
    Scaffold s(1.0f, 10);
    std::vector<Update> order = updates;
    if (perm == 1) std::reverse(order.begin(), order.end());
    if (perm == 2) std::rotate(order.begin(), order.begin() + 3, order.end());
    // Two rounds, so the second starts from the first's control variate.
    Result<ModelWeights> first = OneRound(s, global, order);
    ASSERT_TRUE(first.ok());
    Result<ModelWeights> second = OneRound(s, *first, order);
    ASSERT_TRUE(second.ok());
    Result<ModelWeights> state = s.SaveState();
    ASSERT_TRUE(state.ok());
    hashes.push_back(second->content_hash() ^ (state->content_hash() * 31));
  }
  EXPECT_EQ(hashes[0], hashes[1]);
  EXPECT_EQ(hashes[0], hashes[2]);
}

TEST(ScaffoldTest, ControlDeltasAreCheckedAndEveryUpdateNeedsOne) {
  ModelWeights global = testing::FlatModel(3);
  Scaffold s(1.0f, 0);
  ASSERT_TRUE(s.BeginRound(global).ok());
  // Another size.
  Status wrong = s.AccumulateControl(std::vector<float>{1.0f, 2.0f});
  EXPECT_EQ(wrong.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.message().find("2 values for a model of 3"), std::string::npos)
      << wrong.message();
  // Before its update.
  EXPECT_EQ(s.AccumulateControl(std::vector<float>(3, 1.0f)).code(),
            StatusCode::kFailedPrecondition);
  // Past the exact sum's range (|value| < 2^30 with weight 1).
  EXPECT_EQ(s.CheckControl(UpdateStats{2e9, 3}).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(s.CheckControl(UpdateStats{1e3, 3}).ok());
  // An update whose control delta never came: the round cannot close, c is unchanged.
  const std::vector<float> dy = {1.0f, 1.0f, 1.0f}, dc = {5.0f, 5.0f, 5.0f};
  ASSERT_TRUE(s.Accumulate(10, Dense(dy)).ok());
  ASSERT_TRUE(s.AccumulateControl(dc).ok());
  ASSERT_TRUE(s.Accumulate(10, Dense(dy)).ok());
  Result<ModelWeights> next = s.Finalize();
  EXPECT_EQ(next.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(next.status().message().find("2 updates but 1 control deltas"), std::string::npos)
      << next.status().message();
  ASSERT_TRUE(s.BeginRound(global).ok());
  EXPECT_EQ(s.server_control()[0], 0.0f);
}

TEST(ScaffoldTest, TheControlVariateIsTheCheckpointedState) {
  ModelWeights global = testing::FlatModel(2);
  Scaffold s(1.0f, 0);
  Result<ModelWeights> empty = s.SaveState();
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->num_tensors(), 0u);  // nothing before the first round
  ASSERT_TRUE(OneRound(s, global, {{2, {1.0f, 1.0f}, {0.5f, -0.25f}}}).ok());
  Result<ModelWeights> state = s.SaveState();
  ASSERT_TRUE(state.ok());
  ASSERT_NE(state->find("c"), nullptr);
  EXPECT_EQ(state->data()[0], 0.5f);
  EXPECT_EQ(state->data()[1], -0.25f);

  Scaffold restored(1.0f, 0);
  ASSERT_TRUE(restored.LoadState(*state, 2).ok());
  ASSERT_TRUE(restored.BeginRound(global).ok());
  EXPECT_EQ(restored.server_control()[0], 0.5f);
  EXPECT_EQ(restored.server_control()[1], -0.25f);
  // Another model's size, or another rule's tensors, are refused naming them.
  Status other = Scaffold(1.0f, 0).LoadState(*state, 3);
  EXPECT_EQ(other.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(other.message().find("has 2 values, the model has 3"), std::string::npos)
      << other.message();
  ModelWeights moments = *ModelWeights::Create({{"m", {2}}});
  EXPECT_EQ(Scaffold(1.0f, 0).LoadState(moments, 2).code(), StatusCode::kInvalidArgument);
}

TEST(ScaffoldTest, ARoundLargerThanItsClientsIsRefusedAtStartUp) {
  EXPECT_TRUE(Scaffold(1.0f, 10).CheckRoundSize(10).ok());
  EXPECT_TRUE(Scaffold(1.0f, 0).CheckRoundSize(1000).ok());
  Status s = Scaffold(1.0f, 4).CheckRoundSize(5);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("scaffold(clients=4) counts every client of the run, and a round "
                             "takes 5 updates"),
            std::string::npos)
      << s.message();
}

TEST(ScaffoldTest, TheFactoryBuildsItAndNamesItsKeys) {
  Result<std::unique_ptr<Strategy>> s = MakeStrategy("scaffold(clients=10)");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE((*s)->uses_control_variates());
  EXPECT_EQ((*s)->name(), "scaffold");
  Result<std::unique_ptr<Strategy>> bad = MakeStrategy("scaffold(clients=-1)");
  EXPECT_NE(bad.status().message().find("key 'clients' of scaffold must be an integer"),
            std::string::npos)
      << bad.status().message();
  // Clipping at the coordinator forwards the control variates to the rule it wraps.
  Result<std::unique_ptr<Strategy>> clipped = MakeStrategy("clip(norm=5)+scaffold");
  ASSERT_TRUE(clipped.ok()) << clipped.status().ToString();
  EXPECT_TRUE((*clipped)->uses_control_variates());
  // Rules without control variates take no control deltas.
  Result<std::unique_ptr<Strategy>> fedavg = MakeStrategy("fedavg");
  ASSERT_TRUE(fedavg.ok());
  EXPECT_FALSE((*fedavg)->uses_control_variates());
  EXPECT_EQ((*fedavg)->AccumulateControl(std::vector<float>{1.0f}).code(),
            StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace tributary
