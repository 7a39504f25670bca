// Server optimizers against steps computed by hand (Reddi et al. 2021, Algorithm 2), on a 2-float
// model over three rounds whose averaged deltas are
//   round 1: clients [0.5, 0] (weight 1) and [0, 1] (weight 3)  -> delta = [0.125, 0.75]
//   round 2: one client [-0.25, 0.5] (weight 2)                  -> delta = [-0.25, 0.5]
//   round 3: one client [0.5, -1] (weight 5)                     -> delta = [0.5, -1]
// starting from x = [1, -2], m = 0, v = tau^2. The expected values were worked out in double
// precision; the tolerances allow for m and v being stored as float.
#include "aggregation/server_optimizer.h"

#include <gtest/gtest.h>

#include <cmath>

#include "aggregation/strategy_factory.h"
#include "core/rng.h"
#include "tests/aggregation/test_util.h"

namespace tributary {
namespace {

using testing::Dense;
using testing::FlatModel;

struct Expected {
  float x[2], m[2], v[2];
};

ModelWeights Start() {
  ModelWeights g = FlatModel(2);
  g.data()[0] = 1.0f;
  g.data()[1] = -2.0f;
  return g;
}

// Runs one of the three rounds above.
ModelWeights Round(Strategy& s, const ModelWeights& x, int round) {
  EXPECT_TRUE(s.BeginRound(x).ok());
  std::vector<std::vector<float>> d;
  std::vector<double> w;
  if (round == 1) {
    d = {{0.5f, 0.0f}, {0.0f, 1.0f}};
    w = {1, 3};
  } else if (round == 2) {
    d = {{-0.25f, 0.5f}};
    w = {2};
  } else {
    d = {{0.5f, -1.0f}};
    w = {5};
  }
  for (size_t i = 0; i < d.size(); ++i) EXPECT_TRUE(s.Accumulate(w[i], Dense(d[i])).ok());
  Result<ModelWeights> next = s.Finalize();
  EXPECT_TRUE(next.ok()) << next.status();
  return next.ok() ? *next : x;
}

void CheckSteps(ServerOptimizer::Kind kind, const ServerOptimizer::Params& p,
                const Expected (&want)[3]) {
  ServerOptimizer opt(kind, p);
  ModelWeights x = Start();
  for (int r = 1; r <= 3; ++r) {
    SCOPED_TRACE("round " + std::to_string(r));
    x = Round(opt, x, r);
    const Expected& e = want[r - 1];
    ModelWeights st = *opt.SaveState();
    const TensorInfo* m = st.find("m");
    ASSERT_NE(m, nullptr);
    for (int i = 0; i < 2; ++i) {
      EXPECT_NEAR(x.data()[i], e.x[i], 2e-6);
      EXPECT_NEAR(st.data()[m->offset + i], e.m[i], 1e-7);
      if (kind != ServerOptimizer::Kind::kAvgM) {
        const TensorInfo* v = st.find("v");
        ASSERT_NE(v, nullptr);
        EXPECT_NEAR(st.data()[v->offset + i], e.v[i], 1e-6 * e.v[i]);
      }
    }
  }
}

TEST(ServerOptimizerTest, FedAvgMHandComputed) {
  // m = 0.9 m + delta; x += 1.0 * m.
  // r1: m = [0.125, 0.75]                    x = [1.125, -1.25]
  // r2: m = [0.1125 - 0.25, 0.675 + 0.5]     x = [0.9875, -0.075]
  // r3: m = [-0.12375 + 0.5, 1.0575 - 1]     x = [1.36375, -0.0175]
  ServerOptimizer::Params p;
  p.server_lr = 1.0;
  p.momentum = 0.9;
  const Expected want[3] = {{{1.125f, -1.25f}, {0.125f, 0.75f}, {}},
                            {{0.9875f, -0.075f}, {-0.1375f, 1.175f}, {}},
                            {{1.36375f, -0.0175f}, {0.37625f, 0.0575f}, {}}};
  CheckSteps(ServerOptimizer::Kind::kAvgM, p, want);
}

ServerOptimizer::Params Adaptive() {
  ServerOptimizer::Params p;
  p.server_lr = 0.1;
  p.beta1 = 0.9;
  p.beta2 = 0.99;
  p.tau = 0.01;
  return p;
}

TEST(ServerOptimizerTest, FedAdagradHandComputed) {
  // r1, coordinate 0: m = 0.1 * 0.125 = 0.0125; v = 1e-4 + 0.015625 = 0.015725;
  //   x = 1 + 0.1 * 0.0125 / (sqrt(0.015725) + 0.01) = 1 + 0.00125 / 0.1354 = 1.00923195.
  const Expected want[3] = {
      {{1.00923195f, -1.99013244f}, {0.0125f, 0.075f}, {0.015725f, 0.5626f}},
      {{1.00448545f, -1.9772408f}, {-0.01375f, 0.1175f}, {0.078225f, 0.8126f}},
      {{1.01094014f, -1.97681686f}, {0.037625f, 0.00575f}, {0.328225f, 1.8126f}}};
  CheckSteps(ServerOptimizer::Kind::kAdagrad, Adaptive(), want);
}

TEST(ServerOptimizerTest, FedAdamHandComputed) {
  // r1, coordinate 0: m = 0.0125; v = 0.99 * 1e-4 + 0.01 * 0.015625 = 2.5525e-4;
  //   x = 1 + 0.00125 / (0.01597655 + 0.01) = 1.04812033.
  const Expected want[3] = {
      {{1.04812033f, -1.91244161f}, {0.0125f, 0.075f}, {0.00025525f, 0.005724f}},
      {{1.01342086f, -1.7953749f}, {-0.01375f, 0.1175f}, {0.0008776975f, 0.00816676f}},
      {{1.06871726f, -1.79139514f}, {0.037625f, 0.00575f}, {0.00336892053f, 0.0180850924f}}};
  CheckSteps(ServerOptimizer::Kind::kAdam, Adaptive(), want);
}

TEST(ServerOptimizerTest, FedYogiHandComputed) {
  // r1, coordinate 0: v - d^2 = 1e-4 - 0.015625 < 0, so v = 1e-4 + 0.01 * 0.015625 = 2.5625e-4;
  //   x = 1 + 0.00125 / (0.016007811 + 0.01) = 1.04806248.
  const Expected want[3] = {
      {{1.04806248f, -1.91244836f}, {0.0125f, 0.075f}, {0.00025625f, 0.005725f}},
      {{1.01341538f, -1.79575562f}, {-0.01375f, 0.1175f}, {0.00088125f, 0.008225f}},
      {{1.06862568f, -1.79179011f}, {0.037625f, 0.00575f}, {0.00338125f, 0.018225f}}};
  CheckSteps(ServerOptimizer::Kind::kYogi, Adaptive(), want);
}

TEST(ServerOptimizerTest, YogiShrinksVWhenItExceedsDeltaSquared) {
  // v = tau^2 = 1 is larger than d^2 = 0.25, so Yogi decreases it: v = 1 - 0.5 * 0.25 = 0.875;
  // Adam would give 0.5 * 1 + 0.5 * 0.25 = 0.625.
  ServerOptimizer::Params p;
  p.server_lr = 1.0;
  p.beta1 = 0.0;
  p.beta2 = 0.5;
  p.tau = 1.0;
  ServerOptimizer yogi(ServerOptimizer::Kind::kYogi, p);
  ASSERT_TRUE(yogi.BeginRound(FlatModel(1)).ok());
  std::vector<float> d = {0.5f};
  ASSERT_TRUE(yogi.Accumulate(1, Dense(d)).ok());
  ModelWeights x = *yogi.Finalize();
  ModelWeights st = *yogi.SaveState();
  EXPECT_FLOAT_EQ(st.data()[st.find("v")->offset], 0.875f);
  EXPECT_NEAR(x.data()[0], 0.5 / (std::sqrt(0.875) + 1.0), 1e-6);
}

TEST(ServerOptimizerTest, StateRoundTripContinuesIdentically) {
  for (const char* spec : {"fedavgm", "fedadagrad", "fedadam", "fedyogi"}) {
    SCOPED_TRACE(spec);
    const size_t n = 777;
    Rng rng(5);
    std::vector<std::vector<float>> d(4, std::vector<float>(n));
    for (auto& v : d)
      for (float& f : v) f = static_cast<float>(rng.Normal() * 0.1);
    auto a = *MakeStrategy(spec);
    EXPECT_EQ(a->SaveState()->num_tensors(), 0u);  // nothing before the first round
    ModelWeights x = FlatModel(n, 0.5f);
    for (int r = 0; r < 2; ++r) {
      ASSERT_TRUE(a->BeginRound(x).ok());
      ASSERT_TRUE(a->Accumulate(10, Dense(d[r])).ok());
      ASSERT_TRUE(a->Accumulate(30, Dense(d[r + 1])).ok());
      x = *a->Finalize();
    }
    ModelWeights saved = *a->SaveState();
    auto b = *MakeStrategy(spec);
    ASSERT_TRUE(b->LoadState(saved, n).ok());
    ModelWeights xa = x, xb = x;
    for (int r = 2; r < 4; ++r) {
      ASSERT_TRUE(a->BeginRound(xa).ok());
      ASSERT_TRUE(b->BeginRound(xb).ok());
      ASSERT_TRUE(a->Accumulate(7, Dense(d[r])).ok());
      ASSERT_TRUE(b->Accumulate(7, Dense(d[r])).ok());
      xa = *a->Finalize();
      xb = *b->Finalize();
      EXPECT_EQ(xa.content_hash(), xb.content_hash());
    }
    // A fresh optimizer (zero moments) diverges from the restored one: the state matters.
    auto c = *MakeStrategy(spec);
    ASSERT_TRUE(c->BeginRound(x).ok());
    ASSERT_TRUE(c->Accumulate(7, Dense(d[2])).ok());
    ASSERT_TRUE(b->BeginRound(x).ok());
    ASSERT_TRUE(b->Accumulate(7, Dense(d[2])).ok());
    EXPECT_NE(c->Finalize()->content_hash(), b->Finalize()->content_hash());
  }
}

TEST(ServerOptimizerTest, ResultDoesNotDependOnArrivalOrder) {
  const size_t n = 1000;
  Rng rng(8);
  std::vector<std::vector<float>> d(5, std::vector<float>(n));
  for (auto& v : d)
    for (float& f : v) f = static_cast<float>(rng.Normal());
  auto run = [&](std::vector<int> order) {
    auto s = *MakeStrategy("fedadam(server_lr=0.1)");
    EXPECT_TRUE(s->BeginRound(FlatModel(n)).ok());
    for (int c : order) EXPECT_TRUE(s->Accumulate(1.0 + c, Dense(d[c])).ok());
    return s->Finalize()->content_hash();
  };
  EXPECT_EQ(run({0, 1, 2, 3, 4}), run({3, 1, 4, 0, 2}));
}

TEST(ServerOptimizerTest, RejectsBadStateAndMisuse) {
  auto adam = *MakeStrategy("fedadam");
  std::vector<float> d(3, 1.0f);
  EXPECT_EQ(adam->Accumulate(1, Dense(d)).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(adam->BeginRound(FlatModel(3)).ok());
  EXPECT_EQ(adam->Finalize().status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(adam->Accumulate(0, Dense(d)).code(), StatusCode::kInvalidArgument);

  ModelWeights only_m = *ModelWeights::Create({{"m", {3}}});
  Status s = adam->LoadState(only_m, 3);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'m' and 'v'"), std::string::npos) << s;
  ModelWeights neg = *ModelWeights::Create({{"m", {3}}, {"v", {3}}});
  neg.data()[4] = -1.0f;
  EXPECT_NE(adam->LoadState(neg, 3).message().find("negative"), std::string::npos);
  // A state saved for another model size is refused when it is loaded...
  ModelWeights small = *ModelWeights::Create({{"m", {2}}, {"v", {2}}});
  Status l = adam->LoadState(small, 3);
  EXPECT_EQ(l.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(l.message().find("2 values per tensor, the model has 3"), std::string::npos) << l;
  // ...and, should one get in anyway, when a round begins.
  ASSERT_TRUE(adam->LoadState(small, 2).ok());
  Status b = adam->BeginRound(FlatModel(3));
  EXPECT_EQ(b.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(b.message().find("2 values, the model has 3"), std::string::npos) << b;
  // A stateless rule refuses a checkpoint that holds state.
  auto fedavg = *MakeStrategy("fedavg");
  EXPECT_EQ(fedavg->LoadState(small, 2).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(fedavg->LoadState(ModelWeights(), 2).ok());
}

}  // namespace
}  // namespace tributary
