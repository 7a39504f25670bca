// The asynchronous engine with secure aggregation: clients dispatched together form a cohort with
// its own session; a cohort's unmasked sum is one contribution to the buffer, with one staleness.
// Real SecAggClients answer (secagg_edges.h); 30% of them drop out, and each step is still the
// exact weighted sum of its survivors' updates (to the integer domain's step), discounted by the
// cohort's staleness.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "aggregation/fedavg.h"
#include "coordinator/async_engine.h"
#include "secagg_edges.h"

namespace tributary {
namespace {

using namespace std::chrono_literals;

class AsyncEngineSecAggTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ca_ = *MakeCaCertificate("Async engine CA");
    verifier_ = std::make_unique<CertificateVerifier>(*CertificateVerifier::FromPem(ca_.cert_pem));
  }

  RoundConfig Config() {
    RoundConfig c;
    c.mode = "async";
    c.rounds = 2;
    c.clients_per_round = 5;  // a cohort
    c.async.concurrency = 10;
    c.async.buffer_size = 3;
    c.async.staleness_weight = "polynomial:1";  // s(1) = 1/2
    c.min_available = 10;
    c.round_timeout = 30s;
    c.secagg.enabled = true;
    c.secagg.clip = 0.5f;
    c.secagg.quant_bits = 12;
    c.secagg.max_weight = 1024;
    c.secagg.max_dropout = 0.3;
    c.secagg.phase_timeout = 5s;
    return c;
  }

  void Make(RoundConfig cfg, int n) {
    init_ = *ModelWeights::Create({{"w", {6}}, {"b", {2}}});
    for (size_t i = 0; i < init_.size(); ++i) init_.data()[i] = 0.1f * static_cast<float>(i);
    RunEngine::Hooks hooks;
    hooks.on_round_complete = [this](const RoundSummary& s, const ModelWeights& m) {
      summaries_.push_back(s);
      models_.push_back(m);
    };
    Result<std::unique_ptr<AsyncEngine>> e =
        AsyncEngine::Create(cfg, std::make_unique<FedAvg>(), init_, 0, 0, hooks);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(*e);
    for (int i = 0; i < n; ++i) {
      const std::string id = "edge-" + std::to_string(i);
      std::vector<float> delta(init_.size());
      for (size_t j = 0; j < delta.size(); ++j)
        delta[j] = 0.01f * static_cast<float>((i + 1) * (j % 3 + 1)) - 0.05f;
      edges_[id] =
          testing::MakeSecAggEdge(ca_, id, 100 * static_cast<uint64_t>(i + 1), std::move(delta));
    }
  }

  // The weighted mean of the updates of `ids`.
  std::vector<double> Mean(const std::set<std::string>& ids) {
    std::vector<double> out(init_.size(), 0.0);
    double total = 0;
    for (const std::string& id : ids) {
      const testing::SecAggEdge& e = edges_.at(id);
      total += static_cast<double>(e.examples);
      for (size_t j = 0; j < out.size(); ++j)
        out[j] += static_cast<double>(e.examples) * e.delta[j];
    }
    for (double& v : out) v /= total;
    return out;
  }

  PemPair ca_;
  std::unique_ptr<CertificateVerifier> verifier_;
  std::map<std::string, testing::SecAggEdge> edges_;
  ModelWeights init_;
  TimePoint now_{};
  std::unique_ptr<AsyncEngine> engine_;
  std::vector<RoundSummary> summaries_;
  std::vector<ModelWeights> models_;
};

TEST_F(AsyncEngineSecAggTest, CohortsWithThirtyPercentDropoutsGiveExactStalenessWeightedSums) {
  Make(Config(), 10);
  std::map<std::string, uint64_t> cohort_of;  // each client's first cohort
  for (auto& [id, e] : edges_)
    engine_->OnJoined(id, ClientCapabilities{"cpu", {"dense"}, e.examples, 0, {}}, now_);
  // Two cohorts of five went out together, on version 0; three clients never answer.
  const std::set<std::string> silent = {"edge-1", "edge-4", "edge-8"};
  testing::PlaySecAgg(*engine_, edges_, *verifier_, now_, silent);
  EXPECT_EQ(engine_->in_flight(), 10u);
  for (auto& [id, e] : edges_)
    if (!silent.count(id)) {
      ASSERT_TRUE(e.start.has_value()) << id;
      cohort_of[id] = e.start->round;
    }
  // The phases wait for the silent ones until their deadline, then go on without them.
  for (int i = 0; i < 6 && !engine_->finished(); ++i) {
    now_ += 5s;
    engine_->OnTick(now_);
    testing::PlaySecAgg(*engine_, edges_, *verifier_, now_, silent);
  }
  ASSERT_TRUE(engine_->finished()) << engine_->failure().ToString();
  ASSERT_TRUE(engine_->failure().ok()) << engine_->failure().ToString();
  ASSERT_EQ(summaries_.size(), 2u);

  // Each step is one cohort's survivors (at least K = 3 each): the first on staleness 0, the
  // second, computed on version 0 too, one version late and so weighed 1/2.
  std::map<uint64_t, std::set<std::string>> survivors;
  for (const auto& [id, round] : cohort_of) survivors[round].insert(id);
  ASSERT_EQ(survivors.size(), 2u);
  const IntDomain domain = *IntDomain::Create({0.5f, 12, 1024, 5});
  std::vector<std::set<std::string>> order;  // the cohorts in the order their steps came
  for (const RoundSummary& s : summaries_) {
    for (auto& [round, ids] : survivors) {
      uint64_t weight = 0;
      for (const std::string& id : ids) weight += edges_.at(id).examples;
      if (weight == s.num_examples) order.push_back(ids);
    }
    ASSERT_TRUE(s.staleness.has_value());
  }
  ASSERT_EQ(order.size(), 2u) << "each step's weight is one cohort's survivors'";
  EXPECT_EQ(summaries_[0].accepted, static_cast<int64_t>(order[0].size()));
  EXPECT_EQ(summaries_[1].accepted, static_cast<int64_t>(order[1].size()));
  EXPECT_EQ(summaries_[0].staleness->max, 0u);
  EXPECT_EQ(summaries_[1].staleness->max, 1u);
  EXPECT_EQ(summaries_[0].dropped + summaries_[1].dropped, 3);
  const std::vector<double> first = Mean(order[0]), second = Mean(order[1]);
  for (size_t j = 0; j < init_.size(); ++j) {
    const double step1 = init_.data()[j] + first[j];
    EXPECT_NEAR(models_[0].data()[j], step1, domain.step()) << j;
    EXPECT_NEAR(models_[1].data()[j], step1 + 0.5 * second[j], 2 * domain.step()) << j;
  }
  // The silent members cool down, as a client whose task expires does: a miss in the step their
  // cohort ended in (1 for the first cohort, 2 for the second, which ended after step 1), so out
  // of selection until step 3 or 4; the others do not.
  std::multiset<uint64_t> until;
  for (const auto& [id, e] : edges_) {
    SCOPED_TRACE(id);
    if (silent.count(id))
      until.insert(engine_->registry().CoolingUntil(id));
    else
      EXPECT_EQ(engine_->registry().CoolingUntil(id), 0u);
  }
  // Both cohorts had a silent member: 3 (the first cohort's) and 4 (the second's) both occur.
  EXPECT_EQ(until.count(3) + until.count(4), 3u);
  EXPECT_GE(until.count(3), 1u);
  EXPECT_GE(until.count(4), 1u);
}

TEST_F(AsyncEngineSecAggTest, PlaintextUpdatesAreRefusedAndEveryCohortHasItsOwnSession) {
  Make(Config(), 10);
  for (auto& [id, e] : edges_)
    engine_->OnJoined(id, ClientCapabilities{"cpu", {"dense"}, e.examples, 0, {}}, now_);
  std::set<uint64_t> sessions;
  std::map<std::string, uint64_t> task_round;
  for (const RunEngine::Outgoing& o : engine_->TakeOutbox()) {
    if (auto* st = std::get_if<SecAggStartMsg>(&o.message)) sessions.insert(st->round);
    if (auto* t = std::get_if<TaskAssignment>(&o.message)) {
      task_round[o.client_id] = t->round;
      EXPECT_EQ(t->codec.spec, "dense");  // into the integer domain
    }
  }
  EXPECT_EQ(sessions.size(), 2u);     // two cohorts, two sessions
  EXPECT_EQ(task_round.size(), 10u);  // every client one task, with its session's round
  for (const auto& [id, round] : task_round) EXPECT_TRUE(sessions.count(round)) << id;
  UpdateSubmission plain;
  plain.round = task_round["edge-0"];
  Status s = engine_->OnUpdate("edge-0", plain, now_);
  EXPECT_NE(s.message().find("updates are sent masked"), std::string::npos) << s.message();
  RoundConfig small = Config();
  small.async.concurrency = 4;
  EXPECT_FALSE(small.Validate().ok());
}

}  // namespace
}  // namespace tributary
