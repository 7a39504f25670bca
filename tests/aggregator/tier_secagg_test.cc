// Secure aggregation through the tier (docs/tier.md): the round engine chooses one integer domain
// for the round, each aggregator runs a session over its group (SecureGroupShare, played here by
// real SecAggClients), and the engine adds the groups' integer sums and decodes once. The model is
// bitwise the one of the same clients in one session at the coordinator, with 20% of each group
// dropping out after sharing their keys; a group that fails, or a result that lies, changes only
// what it should.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>

#include "../coordinator/secagg_edges.h"
#include "aggregation/fedavg.h"
#include "aggregator/secure_group_share.h"
#include "coordinator/round_engine.h"
#include "privacy/secagg/int_domain.h"

namespace tributary {
namespace {

using namespace std::chrono_literals;

constexpr int kTierGroups = 3;
constexpr int kGroupSize = 5;
const char* const kTierAggregators[kTierGroups] = {"agg-a", "agg-b", "agg-c"};

class TierSecAggTest : public ::testing::Test {
 protected:
  using Edge = testing::SecAggEdge;

  void SetUp() override {
    ca_ = *MakeCaCertificate("Tier CA");
    verifier_ = std::make_unique<CertificateVerifier>(*CertificateVerifier::FromPem(ca_.cert_pem));
    init_ = *ModelWeights::Create({{"w", {6}}, {"b", {2}}});
    for (size_t i = 0; i < init_.size(); ++i) init_.data()[i] = 0.1f * static_cast<float>(i);
  }

  static RoundConfig Config() {
    RoundConfig c;
    c.rounds = 1;
    c.clients_per_round = kTierGroups * kGroupSize;
    c.min_available = kTierGroups * kGroupSize;
    c.round_timeout = 30s;
    c.max_round_attempts = 1;
    c.secagg.enabled = true;
    c.secagg.clip = 0.5f;
    c.secagg.quant_bits = 12;
    c.secagg.max_weight = 1024;
    c.secagg.phase_timeout = 5s;
    return c;
  }

  static std::string Id(int group, int i) {
    return "edge-" + std::to_string(group) + "-" + std::to_string(i);
  }

  // An engine whose clients joined through the aggregators (`tier`) or directly, and fresh edges.
  void Make(bool tier, RoundConfig config = Config()) {
    log_.Clear();
    RunEngine::Hooks hooks = log_.Hooks();
    config_ = config;
    engine_ = *RoundEngine::Create(config, std::make_unique<FedAvg>(), init_, 0, 0, hooks);
    edges_.clear();
    for (int g = 0; g < kTierGroups; ++g) {
      for (int i = 0; i < kGroupSize; ++i) {
        const int k = g * kGroupSize + i;
        std::vector<float> delta(init_.size());
        for (size_t j = 0; j < delta.size(); ++j)
          delta[j] = 0.01f * static_cast<float>((k % 7 + 1) * (j % 3 + 1)) - 0.04f;
        Edge& e = edges_[Id(g, i)] = testing::MakeSecAggEdge(
            ca_, Id(g, i), 90 * static_cast<uint64_t>(k + 1), std::move(delta));
        engine_->OnJoined(Id(g, i), ClientCapabilities{"cpu", {"dense"}, e.examples, 0, {}}, now_,
                          tier ? kTierAggregators[g] : "");
      }
    }
  }

  // What the coordinator service does with the engine's outbox: each aggregator's clients' start
  // and tasks become one GroupTask per aggregator.
  std::map<std::string, GroupTask> GroupTasks() {
    std::map<std::string, GroupTask> tasks;
    for (RunEngine::Outgoing& o : engine_->TakeOutbox()) {
      const std::string via = engine_->registry().Find(o.client_id)->via;
      EXPECT_FALSE(via.empty()) << o.client_id << " was sent "
                                << MessageTypeName(TypeOf(o.message));
      GroupTask& g = tasks[via];
      if (auto* start = std::get_if<SecAggStartMsg>(&o.message)) g.secagg = *start;
      if (auto* t = std::get_if<TaskAssignment>(&o.message)) {
        g.task = *t;
        g.members.push_back({o.client_id, t->fit.seed});
      }
    }
    return tasks;
  }

  // Runs every group's session at its aggregator, `quit` dropping out after sharing keys; returns
  // each aggregator's result.
  std::map<std::string, GroupResult> RunGroups(const std::set<std::string>& quit,
                                               const std::set<std::string>& silent = {}) {
    TierConfig tc{config_, "fedavg", 1.0};
    std::map<std::string, std::unique_ptr<SecureGroupShare>> shares;
    for (auto& [via, task] : GroupTasks()) {
      EXPECT_NE(task.secagg.round, 0u) << via;
      std::vector<std::string> members;
      for (const GroupAssignee& m : task.members) members.push_back(m.client_id);
      auto s = SecureGroupShare::Start(tc, task, members, now_);
      EXPECT_TRUE(s.ok()) << s.status();
      if (!s.ok()) return {};
      shares[via] = std::move(*s);
      testing::PlaySecAgg(*shares[via], edges_, *verifier_, now_, silent, quit);
    }
    // The masked inputs of those who quit never come: the phase ends at the task's deadline.
    const TimePoint later = now_ + config_.round_timeout;
    std::map<std::string, GroupResult> results;
    for (auto& [via, share] : shares) {
      share->OnTick(later);
      testing::PlaySecAgg(*share, edges_, *verifier_, later, silent, quit);
      share->OnTick(later + config_.secagg.phase_timeout);
      EXPECT_TRUE(share->over()) << via << " in phase " << share->phase_name();
      results[via] = share->TakeResult();
    }
    now_ = later;
    return results;
  }

  PemPair ca_;
  std::unique_ptr<CertificateVerifier> verifier_;
  std::map<std::string, Edge> edges_;
  ModelWeights init_;
  RoundConfig config_;
  TimePoint now_{};
  std::unique_ptr<RoundEngine> engine_;
  testing::RoundLog log_;
};

TEST_F(TierSecAggTest, GroupSumsGiveBitwiseTheOneSessionModelWithAFifthOfEachGroupDropping) {
  // One of each group's five (20%) drops out after sharing keys: its pairwise masks must be
  // removed from its group's sum through the shares its neighbours hold.
  const std::set<std::string> quit = {Id(0, 1), Id(1, 4), Id(2, 0)};

  // The reference: every client connected to the coordinator, one session.
  Make(/*tier=*/false);
  engine_->OnTick(now_);
  testing::PlaySecAgg(*engine_, edges_, *verifier_, now_, {}, quit);
  now_ += config_.round_timeout;
  engine_->OnTick(now_);
  testing::PlaySecAgg(*engine_, edges_, *verifier_, now_, {}, quit);
  ASSERT_EQ(log_.models.size(), 1u) << log_.first_failure();
  const ModelWeights one_session = log_.models[0];
  const RoundSummary reference = log_.summaries[0];
  EXPECT_EQ(reference.accepted, kTierGroups * kGroupSize - 3);
  // Those who sent no masked input cool down; the others do not.
  std::map<std::string, uint64_t> cooling;
  for (const auto& [id, e] : edges_) cooling[id] = engine_->registry().CoolingUntil(id);
  for (const auto& [id, until] : cooling) {
    if (quit.count(id))
      EXPECT_EQ(until, 3u) << id;  // out of round 2: the next 1 round after its first miss
    else
      EXPECT_EQ(until, 0u) << id;
  }

  // The same clients behind three aggregators.
  now_ = TimePoint{};
  Make(/*tier=*/true);
  engine_->OnTick(now_);
  std::map<std::string, GroupResult> results = RunGroups(quit);
  ASSERT_EQ(results.size(), size_t{kTierGroups});
  for (auto& [via, r] : results) {
    EXPECT_EQ(r.secagg_failure, "") << via;
    EXPECT_EQ(r.records.size(), size_t{kGroupSize - 1}) << via;
    ASSERT_TRUE(log_.models.empty()) << "the round closed before every group's sum came";
    const Status taken = engine_->OnSecureGroupResult(via, r, now_);
    ASSERT_TRUE(taken.ok()) << taken;
  }
  ASSERT_EQ(log_.models.size(), 1u) << log_.first_failure();
  EXPECT_EQ(log_.summaries[0].accepted, reference.accepted);
  EXPECT_EQ(log_.summaries[0].num_examples, reference.num_examples);
  // Silent in their aggregators' sessions, the same clients cool down as in the one session,
  // until the same round.
  for (const auto& [id, until] : cooling)
    EXPECT_EQ(engine_->registry().CoolingUntil(id), until) << id;
  ASSERT_EQ(log_.models[0].size(), one_session.size());
  EXPECT_EQ(std::memcmp(log_.models[0].data().data(), one_session.data().data(),
                        one_session.size() * sizeof(float)),
            0)
      << "the tier's model differs from the one-session model";

  // And both are the survivors' weighted mean within the quantization step.
  const IntDomain domain = *IntDomain::Create({0.5f, 12, 1024, kTierGroups * kGroupSize});
  for (size_t j = 0; j < init_.size(); ++j) {
    double sum = 0, total = 0;
    for (auto& [id, e] : edges_) {
      if (quit.count(id)) continue;
      const double w = static_cast<double>(std::min<uint64_t>(e.examples, 1024));
      sum += w * e.delta[j];
      total += w;
    }
    EXPECT_NEAR(log_.models[0].data()[j], init_.data()[j] + sum / total, domain.step()) << j;
  }
}

TEST_F(TierSecAggTest, AFailedGroupLeavesTheRoundToTheOthersAndALyingResultIsRefused) {
  // Group c loses three of five before they share keys: its session fails (too few clients), and
  // the round closes from groups a and b.
  const std::set<std::string> silent = {Id(2, 0), Id(2, 1), Id(2, 2)};
  Make(/*tier=*/true);
  engine_->OnTick(now_);
  std::map<std::string, GroupResult> results = RunGroups({}, silent);
  ASSERT_EQ(results.size(), size_t{kTierGroups});
  EXPECT_NE(results["agg-c"].secagg_failure.find("at least"), std::string::npos)
      << results["agg-c"].secagg_failure;
  EXPECT_EQ(results["agg-c"].partial.size(), 0u);

  // A result naming a client of another group is refused whole, naming the aggregator.
  GroupResult lying = results["agg-a"];
  lying.records[0].client_id = Id(1, 0);
  Status refused = engine_->OnSecureGroupResult("agg-a", lying, now_);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("aggregator 'agg-a'"), std::string::npos) << refused;
  // One of another length, likewise.
  GroupResult short_sum = results["agg-a"];
  short_sum.secagg_length -= 1;
  EXPECT_NE(engine_->OnSecureGroupResult("agg-a", short_sum, now_).message().find("values of"),
            std::string::npos);
  // Fewer survivors than secagg.min_clients would tell the aggregator too much: refused.
  GroupResult thin = results["agg-a"];
  thin.records.resize(2);
  EXPECT_NE(engine_->OnSecureGroupResult("agg-a", thin, now_).message().find("secagg.min_clients"),
            std::string::npos);

  for (const char* via : {"agg-c", "agg-a", "agg-b"}) {
    ASSERT_TRUE(log_.models.empty());
    ASSERT_TRUE(engine_->OnSecureGroupResult(via, results[via], now_).ok()) << via;
  }
  ASSERT_EQ(log_.models.size(), 1u) << log_.first_failure();
  EXPECT_EQ(log_.summaries[0].accepted, 2 * kGroupSize);
  // A second result from one group is refused once the round is over.
  EXPECT_FALSE(engine_->OnSecureGroupResult("agg-a", results["agg-a"], now_).ok());
}

TEST_F(TierSecAggTest, TooFewSurvivorsAcrossTheGroupsFailTheAttemptNamingEachGroup) {
  RoundConfig c = Config();
  c.secagg.min_clients = 3;
  Make(/*tier=*/true, c);
  engine_->OnTick(now_);
  // Every group loses three of five: each session fails; nothing is released.
  std::set<std::string> silent;
  for (int g = 0; g < kTierGroups; ++g)
    for (int i = 0; i < 3; ++i) silent.insert(Id(g, i));
  std::map<std::string, GroupResult> results = RunGroups({}, silent);
  for (auto& [via, r] : results) ASSERT_TRUE(engine_->OnSecureGroupResult(via, r, now_).ok());
  EXPECT_TRUE(log_.models.empty());
  ASSERT_EQ(log_.failures.size(), 1u);
  EXPECT_NE(log_.failures[0].find("0 inputs were summed"), std::string::npos) << log_.failures[0];
  EXPECT_NE(log_.failures[0].find("aggregator agg-b"), std::string::npos) << log_.failures[0];
}

TEST_F(TierSecAggTest, AGroupThatNeverAnswersIsGivenUpAtTheWait) {
  Make(/*tier=*/true);
  engine_->OnTick(now_);
  std::map<std::string, GroupResult> results = RunGroups({});
  ASSERT_TRUE(engine_->OnSecureGroupResult("agg-a", results["agg-a"], now_).ok());
  ASSERT_TRUE(engine_->OnSecureGroupResult("agg-b", results["agg-b"], now_).ok());
  EXPECT_TRUE(log_.models.empty());
  // agg-c's result never comes: the engine waits until the deadline and two phase timeouts.
  const std::optional<TimePoint> wake = engine_->next_wakeup();
  ASSERT_TRUE(wake.has_value());
  EXPECT_EQ(*wake, TimePoint{} + config_.round_timeout + 2 * config_.secagg.phase_timeout);
  engine_->OnTick(*wake);
  ASSERT_EQ(log_.models.size(), 1u) << log_.first_failure();
  EXPECT_EQ(log_.summaries[0].accepted, 2 * kGroupSize);
  // Late, it is refused.
  EXPECT_FALSE(engine_->OnSecureGroupResult("agg-c", results["agg-c"], *wake).ok());
}

// Differential privacy with the noise on the clients composes with the tier as without it: each
// client weighs 1 and adds its share of the noise, sized for the fewest inputs the round may close
// with (run.min_completed), counted over every group; fewer survivors than that fail the attempt.
TEST_F(TierSecAggTest, ClientSideNoiseIsSizedForTheFewestInputsAcrossTheGroups) {
  RoundConfig c = Config();
  c.min_completed = 12;
  c.dp.enabled = true;
  c.dp.placement = "client";
  c.dp.noise_multiplier = 1.0;
  c.dp.clip_norm = 0.5;
  c.dp.population = 15;
  ASSERT_TRUE(c.Validate().ok()) << c.Validate();
  Make(/*tier=*/true, c);
  engine_->OnTick(now_);
  std::map<std::string, GroupResult> results = RunGroups({Id(0, 0), Id(1, 0), Id(2, 0)});
  for (const auto& [id, e] : edges_) {
    ASSERT_TRUE(e.start.has_value()) << id;
    EXPECT_EQ(e.start->max_weight, 1u) << "each client weighs 1 under DP";
    EXPECT_DOUBLE_EQ(e.start->dp_clip_norm, 0.5);
    EXPECT_DOUBLE_EQ(e.start->dp_noise_stddev, 1.0 * 0.5 / std::sqrt(12.0));
  }
  for (auto& [via, r] : results) ASSERT_TRUE(engine_->OnSecureGroupResult(via, r, now_).ok());
  ASSERT_EQ(log_.models.size(), 1u) << log_.first_failure();
  EXPECT_EQ(log_.summaries[0].accepted, 12);
  EXPECT_EQ(log_.summaries[0].num_examples, 12u);  // the summed unit weights
  ASSERT_TRUE(log_.summaries[0].dp.has_value());
  EXPECT_GT(log_.summaries[0].dp->epsilon, 0.0);

  // The noise sized for 13 inputs, and again one of each group's five drops: 12 survivors, whose
  // sum would hold less than the whole noise. Each group's session closes (4 of 5 is enough
  // there); the round does not.
  now_ = TimePoint{};
  c.min_completed = 13;
  Make(/*tier=*/true, c);
  engine_->OnTick(now_);
  results = RunGroups({Id(0, 0), Id(1, 0), Id(2, 0)});
  for (auto& [via, r] : results) {
    EXPECT_EQ(r.records.size(), size_t{kGroupSize - 1}) << via;
    ASSERT_TRUE(engine_->OnSecureGroupResult(via, r, now_).ok());
  }
  EXPECT_TRUE(log_.models.empty());
  ASSERT_FALSE(log_.failures.empty());
  EXPECT_NE(log_.failures.back().find("12 inputs were summed; at least 13 are needed"),
            std::string::npos)
      << log_.failures.back();
}

}  // namespace
}  // namespace tributary
