// The round engine with differential privacy (dp.*): clipping before the strategy, the noised
// mean, epsilon per round from the accountant, the budget that stops the run, Poisson sampling,
// and what it refuses.
#include <gtest/gtest.h>

#include <cmath>

#include "aggregation/fedavg.h"
#include "aggregation/strategy_factory.h"
#include "compression/dense_codec.h"
#include "coordinator/round_engine.h"

namespace tributary {
namespace {

using namespace std::chrono_literals;

class RoundEngineDpTest : public ::testing::Test {
 protected:
  RoundConfig Config(int64_t k, double z) {
    RoundConfig c;
    c.rounds = 3;
    c.clients_per_round = k;
    c.min_available = k;
    c.min_completed = 1;
    c.round_timeout = 10s;
    c.dp.enabled = true;
    c.dp.noise_multiplier = z;
    c.dp.clip_norm = 1.0;
    c.dp.delta = 1e-5;
    c.dp.noise_seed = 11;
    return c;
  }
  Status Make(RoundConfig cfg, size_t dim, std::string strategy = "fedavg") {
    ModelWeights init = *ModelWeights::Create({{"w", {static_cast<int64_t>(dim)}}});
    RunEngine::Hooks hooks;
    hooks.on_round_complete = [this](const RoundSummary& s, const ModelWeights& m) {
      summaries_.push_back(s);
      models_.push_back(m);
    };
    Result<std::unique_ptr<Strategy>> rule = MakeStrategy(strategy);
    if (!rule.ok()) return rule.status();
    Result<std::unique_ptr<RoundEngine>> e =
        RoundEngine::Create(cfg, std::move(*rule), init, 0, 0, hooks);
    if (!e.ok()) return e.status();
    engine_ = std::move(*e);
    return Status::Ok();
  }
  void Join(int n) {
    for (int i = 0; i < n; ++i)
      engine_->OnJoined("c" + std::to_string(i), ClientCapabilities{"cpu", {"dense"}, 500, 0, {}},
                        now_);  // as many as each update claims
  }
  std::map<std::string, TaskAssignment> Tasks() {
    std::map<std::string, TaskAssignment> out;
    for (auto& o : engine_->TakeOutbox())
      if (auto* t = std::get_if<TaskAssignment>(&o.message)) out[o.client_id] = *t;
    return out;
  }
  UpdateSubmission Update(const TaskAssignment& t, const std::vector<float>& delta) {
    UpdateSubmission u;
    u.round = t.round;
    u.task_id = t.task_id;
    u.model_version = t.model_version;
    u.num_examples = 500;  // ignored: every client weighs 1 under DP
    u.update.codec = "dense";
    u.update.layout_fingerprint = t.model.layout_fingerprint;
    u.update.num_floats = delta.size();
    u.update.bytes = *DenseCodec().Encode(delta);
    return u;
  }
  // Every task answered with `delta`; returns how many there were.
  size_t AnswerAll(const std::vector<float>& delta) {
    std::map<std::string, TaskAssignment> tasks = Tasks();
    for (auto& [id, t] : tasks) EXPECT_TRUE(engine_->OnUpdate(id, Update(t, delta), now_).ok());
    return tasks.size();
  }

  TimePoint now_{};
  std::unique_ptr<RoundEngine> engine_;
  std::vector<RoundSummary> summaries_;
  std::vector<ModelWeights> models_;
};

TEST_F(RoundEngineDpTest, UpdatesAreClippedAndAveragedOverTheExpectedCount) {
  RoundConfig c = Config(3, 0.0);  // clipping only: the mean is exact
  c.dp.expected_clients = 4;
  ASSERT_TRUE(Make(c, 4).ok());
  Join(3);
  std::map<std::string, TaskAssignment> tasks = Tasks();
  ASSERT_EQ(tasks.size(), 3u);
  const std::vector<std::vector<float>> deltas{{3, 4, 0, 0}, {0.3f, 0, 0, 0}, {0, 0, 0, 2}};
  size_t i = 0;
  for (auto& [id, t] : tasks) ASSERT_TRUE(engine_->OnUpdate(id, Update(t, deltas[i++]), now_).ok());
  ASSERT_EQ(summaries_.size(), 1u);
  const std::span<const float> w = models_[0].tensor(0);
  EXPECT_NEAR(w[0], (0.6 + 0.3) / 4, 1e-6);
  EXPECT_NEAR(w[1], 0.8 / 4, 1e-6);
  EXPECT_NEAR(w[2], 0.0, 1e-9);
  EXPECT_NEAR(w[3], 1.0 / 4, 1e-6);
  ASSERT_TRUE(summaries_[0].dp.has_value());
  EXPECT_EQ(summaries_[0].dp->clipped, 2);
  EXPECT_DOUBLE_EQ(summaries_[0].dp->sampling_rate, 1.0);  // 3 of 3 idle clients
}

TEST_F(RoundEngineDpTest, ReleasedNoiseHasStandardDeviationZTimesCOverTheCount) {
  const size_t dim = 100'000;
  RoundConfig c = Config(5, 2.0);
  c.dp.clip_norm = 0.5;
  ASSERT_TRUE(Make(c, dim).ok());
  Join(5);
  ASSERT_EQ(AnswerAll(std::vector<float>(dim, 0.0f)), 5u);
  ASSERT_EQ(summaries_.size(), 1u);
  double sq = 0;
  for (float v : models_[0].tensor(0)) sq += static_cast<double>(v) * v;
  EXPECT_NEAR(std::sqrt(sq / dim), 2.0 * 0.5 / 5, 0.01 * 0.2);
}

TEST_F(RoundEngineDpTest, EpsilonIsTheAccountantsAfterEachRound) {
  RoundConfig c = Config(4, 1.0);
  c.min_available = 10;  // otherwise round 1 would sample 4 of the first 4 to join (q = 1)
  ASSERT_TRUE(Make(c, 8).ok());
  Join(10);
  for (int r = 0; r < 3; ++r) AnswerAll(std::vector<float>(8, 0.1f));
  ASSERT_EQ(summaries_.size(), 3u);
  // Fixed-size sampling: 4 of 10 idle clients, replace-one adjacency (the sum moves by 2C).
  RdpAccountant expect;
  for (int r = 0; r < 3; ++r) {
    expect.Compose(DpSampling::kFixedSize, 0.4, 0.5);
    EXPECT_DOUBLE_EQ(summaries_[r].dp->sampling_rate, 0.4);
    EXPECT_DOUBLE_EQ(summaries_[r].dp->epsilon, expect.Spent(1e-5).epsilon) << r;
  }
  EXPECT_LT(summaries_[0].dp->epsilon, summaries_[1].dp->epsilon);
  EXPECT_LT(summaries_[1].dp->epsilon, summaries_[2].dp->epsilon);
}

TEST_F(RoundEngineDpTest, TheBudgetStopsTheRunBeforeTheRoundThatWouldExceedIt) {
  RoundConfig c = Config(4, 1.0);
  c.rounds = 10;
  c.min_available = 10;
  RdpAccountant a;
  a.Compose(DpSampling::kFixedSize, 0.4, 0.5, 2);
  const double two = a.Spent(1e-5).epsilon;
  a.Compose(DpSampling::kFixedSize, 0.4, 0.5);
  const double three = a.Spent(1e-5).epsilon;
  c.dp.target_epsilon = (two + three) / 2;
  ASSERT_TRUE(Make(c, 8).ok());
  Join(10);
  for (int r = 0; r < 3; ++r) AnswerAll(std::vector<float>(8, 0.1f));
  EXPECT_EQ(summaries_.size(), 2u);
  EXPECT_TRUE(engine_->finished());
  EXPECT_TRUE(engine_->budget_spent());
  EXPECT_TRUE(engine_->failure().ok());
  EXPECT_NE(engine_->stop_reason().find("before round 3"), std::string::npos)
      << engine_->stop_reason();
  EXPECT_NE(engine_->stop_reason().find("dp.target_epsilon"), std::string::npos);
  EXPECT_LE(engine_->dp()->Spent().epsilon, c.dp.target_epsilon);
}

TEST_F(RoundEngineDpTest, PoissonSamplingDrawsEachClientWithProbabilityQ) {
  RoundConfig c = Config(50, 1.0);
  c.rounds = 20;
  c.min_available = 500;  // the whole population idle before the first draw
  c.dp.sampling = "poisson";
  c.dp.population = 500;
  ASSERT_TRUE(Make(c, 2).ok());
  Join(500);
  int64_t total = 0;
  for (int r = 0; r < 20; ++r) {
    const size_t n = AnswerAll({0.1f, 0.2f});
    total += static_cast<int64_t>(n);
  }
  ASSERT_EQ(summaries_.size(), 20u);
  for (const RoundSummary& s : summaries_) {
    EXPECT_DOUBLE_EQ(s.dp->sampling_rate, 0.1);
    EXPECT_EQ(s.accepted, s.selected);  // the round waits for its whole sample
  }
  // 20 rounds of Binomial(500, 0.1): mean 1000, standard deviation 30.
  EXPECT_NEAR(static_cast<double>(total), 1000.0, 120.0);
  RdpAccountant expect;
  expect.Compose(DpSampling::kPoisson, 0.1, 1.0, 20);
  EXPECT_DOUBLE_EQ(summaries_.back().dp->epsilon, expect.Spent(1e-5).epsilon);
}

TEST_F(RoundEngineDpTest, RefusesRulesThatNeedEachUpdateAndBadPlacements) {
  Status s = Make(Config(5, 1.0), 4, "krum(f=1)");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("differential privacy"), std::string::npos) << s.message();
  RoundConfig c = Config(5, 1.0);
  c.dp.placement = "client";
  s = c.Validate();
  EXPECT_NE(s.message().find("secagg.enabled"), std::string::npos) << s.message();
  c = Config(5, 1.0);
  c.secagg.enabled = true;
  s = c.Validate();
  EXPECT_NE(s.message().find("dp.placement"), std::string::npos) << s.message();
  c = Config(5, 1.0);
  c.fraction = 0.5;
  EXPECT_NE(c.Validate().message().find("run.fraction"), std::string::npos);
}

}  // namespace
}  // namespace tributary
