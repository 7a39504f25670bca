// The round engine with secure aggregation (config.secagg): real SecAggClients answer its
// messages, and the round's model is the initial one plus the weighted mean of the survivors'
// updates, though the engine never saw one of them; dropouts, strategy and codec refusals.
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "aggregation/fedavg.h"
#include "aggregation/strategy_factory.h"
#include "coordinator/round_engine.h"
#include "crypto/cert_authority.h"
#include "crypto/signing.h"
#include "privacy/secagg/int_domain.h"
#include "privacy/secagg/secagg_client.h"
#include "privacy/secagg/secagg_wire.h"
#include "secagg_edges.h"

namespace tributary {
namespace {

using namespace std::chrono_literals;

class RoundEngineSecAggTest : public ::testing::Test {
 protected:
  using Edge = testing::SecAggEdge;

  void SetUp() override {
    ca_ = *MakeCaCertificate("RunEngine CA");
    verifier_ = std::make_unique<CertificateVerifier>(*CertificateVerifier::FromPem(ca_.cert_pem));
  }

  RoundConfig Config(int64_t k) {
    RoundConfig c;
    c.rounds = 1;
    c.clients_per_round = k;
    c.min_available = k;
    c.round_timeout = 30s;
    c.secagg.enabled = true;
    c.secagg.clip = 0.5f;
    c.secagg.quant_bits = 12;
    c.secagg.max_weight = 1024;
    c.secagg.phase_timeout = 5s;
    return c;
  }

  void Make(RoundConfig cfg, int n) {
    init_ = *ModelWeights::Create({{"w", {6}}, {"b", {2}}});
    for (size_t i = 0; i < init_.size(); ++i) init_.data()[i] = 0.1f * static_cast<float>(i);
    log_.Clear();
    RunEngine::Hooks hooks = log_.Hooks();
    engine_ = *RoundEngine::Create(cfg, std::make_unique<FedAvg>(), init_, 0, 0, hooks);
    for (int i = 0; i < n; ++i) {
      const std::string id = "edge-" + std::to_string(i);
      std::vector<float> delta(init_.size());
      for (size_t j = 0; j < delta.size(); ++j)
        delta[j] = 0.01f * static_cast<float>((i + 1) * (j % 3 + 1)) - 0.05f;
      Edge& e = edges_[id] =
          testing::MakeSecAggEdge(ca_, id, 100 * static_cast<uint64_t>(i + 1), std::move(delta));
      engine_->OnJoined(id, ClientCapabilities{"cpu", {"dense"}, e.examples, 0, {}}, now_);
    }
  }

  // Plays the clients (all but `silent`) until the engine sends nothing new.
  void Play(const std::set<std::string>& silent,
            const std::set<std::string>& quit_after_sharing = {}) {
    testing::PlaySecAgg(*engine_, edges_, *verifier_, now_, silent, quit_after_sharing);
  }

  std::vector<double> Expected(const std::set<std::string>& left_out) {
    std::vector<double> out(init_.size(), 0.0);
    double total = 0;
    for (auto& [id, e] : edges_) {
      if (left_out.count(id)) continue;
      total += static_cast<double>(e.examples);
      for (size_t j = 0; j < out.size(); ++j)
        out[j] += static_cast<double>(e.examples) * e.delta[j];
    }
    for (size_t j = 0; j < out.size(); ++j) out[j] = init_.data()[j] + out[j] / total;
    return out;
  }

  PemPair ca_;
  std::unique_ptr<CertificateVerifier> verifier_;
  std::map<std::string, Edge> edges_;
  ModelWeights init_;
  TimePoint now_{};
  std::unique_ptr<RoundEngine> engine_;
  testing::RoundLog log_;
};

TEST_F(RoundEngineSecAggTest, ARoundClosesWithTheWeightedMeanOfMaskedUpdates) {
  Make(Config(6), 6);
  engine_->OnTick(now_);
  Play({});
  ASSERT_EQ(log_.summaries.size(), 1u) << log_.first_failure();
  EXPECT_EQ(log_.summaries[0].accepted, 6);
  EXPECT_EQ(log_.summaries[0].num_examples, 2100u);  // 100 + ... + 600
  EXPECT_GT(log_.summaries[0].bytes_up, 0u);
  const IntDomain domain = *IntDomain::Create({0.5f, 12, 1024, 6});
  const std::vector<double> want = Expected({});
  for (size_t j = 0; j < want.size(); ++j)
    EXPECT_NEAR(log_.models[0].data()[j], want[j], domain.step()) << j;
  EXPECT_TRUE(engine_->finished());
}

// run.max_weight caps a client's weight before the masked fold, as it does a plain update's: the
// round's integer domain (SecAggStart.max_weight) is capped there, and so is each client's weight.
TEST_F(RoundEngineSecAggTest, RunMaxWeightCapsTheMaskedWeightsToo) {
  RoundConfig c = Config(6);
  c.max_weight = 200;
  Make(c, 6);  // 100, 200, ..., 600 examples
  engine_->OnTick(now_);
  Play({});
  ASSERT_EQ(log_.summaries.size(), 1u) << log_.first_failure();
  ASSERT_TRUE(edges_["edge-0"].start.has_value());
  EXPECT_EQ(edges_["edge-0"].start->max_weight, 200u);
  EXPECT_EQ(log_.summaries[0].num_examples, 1100u);  // the summed weights: 100 + 5 x 200
  const IntDomain domain = *IntDomain::Create({0.5f, 12, 200, 6});
  for (size_t j = 0; j < init_.size(); ++j) {
    double sum = 0;
    for (auto& [id, e] : edges_)
      sum += static_cast<double>(std::min<uint64_t>(e.examples, 200)) * e.delta[j];
    EXPECT_NEAR(log_.models[0].data()[j], init_.data()[j] + sum / 1100.0, domain.step()) << j;
  }
}

TEST_F(RoundEngineSecAggTest, AClientSilentFromTheStartIsLeftOutAtThePhaseDeadline) {
  Make(Config(6), 6);
  engine_->OnTick(now_);
  Play({"edge-5"});
  EXPECT_TRUE(log_.summaries.empty());
  EXPECT_EQ(engine_->next_wakeup(), now_ + 5s);
  now_ += 5s;
  engine_->OnTick(now_);
  Play({"edge-5"});
  ASSERT_EQ(log_.summaries.size(), 1u) << log_.first_failure();
  EXPECT_EQ(log_.summaries[0].accepted, 5);
  const IntDomain domain = *IntDomain::Create({0.5f, 12, 1024, 6});
  const std::vector<double> want = Expected({"edge-5"});
  for (size_t j = 0; j < want.size(); ++j)
    EXPECT_NEAR(log_.models[0].data()[j], want[j], domain.step()) << j;
  // It cools down as a client silent in a plaintext round does (a miss in round 1: out of
  // selection for round 2); the others do not.
  EXPECT_EQ(engine_->registry().CoolingUntil("edge-5"), 3u);
  EXPECT_EQ(engine_->registry().CoolingUntil("edge-0"), 0u);
}

// A member whose task fails says so (TaskFailed): the masked input phase stops waiting for it,
// whether the failure comes before that phase (it still shares its keys) or during it, and the
// round closes at once with the others' exact sum, its masks removed as a dropout's.
TEST_F(RoundEngineSecAggTest, AMemberWhoseTaskFailsIsADropoutWithoutWaitingForTheDeadline) {
  const IntDomain domain = *IntDomain::Create({0.5f, 12, 1024, 6});
  const std::vector<double> want = Expected({"edge-5"});
  // During the masked input phase: everyone else has masked, the phase waits for edge-5 alone.
  Make(Config(6), 6);
  engine_->OnTick(now_);
  Play({}, {"edge-5"});
  EXPECT_TRUE(log_.summaries.empty());
  EXPECT_EQ(engine_->next_wakeup(), now_ + 30s);  // the round's input deadline
  ASSERT_TRUE(engine_
                  ->OnTaskFailed("edge-5",
                                 TaskFailed{1, 1, TaskFailed::kFit, 13, "trainer.fit failed"}, now_)
                  .ok());
  Play({});
  ASSERT_EQ(log_.summaries.size(), 1u) << log_.first_failure();
  EXPECT_EQ(log_.summaries[0].accepted, 5);
  EXPECT_EQ(log_.summaries[0].dropped, 1);
  for (size_t j = 0; j < want.size(); ++j)
    EXPECT_NEAR(log_.models[0].data()[j], want[j], domain.step()) << j;
  EXPECT_EQ(engine_->registry().CoolingUntil("edge-5"), 3u);

  // Before it: the failure is heard while the keys are advertised; edge-5 still advertises and
  // shares, gets no inbox, and the masked input phase never waits for it.
  edges_.clear();
  Make(Config(6), 6);
  engine_->OnTick(now_);
  ASSERT_TRUE(
      engine_->OnTaskFailed("edge-5", TaskFailed{1, 1, TaskFailed::kFit, 13, "no data"}, now_)
          .ok());
  Play({});
  ASSERT_EQ(log_.summaries.size(), 1u) << log_.first_failure();
  EXPECT_EQ(log_.summaries[0].accepted, 5);
  for (size_t j = 0; j < want.size(); ++j)
    EXPECT_NEAR(log_.models[0].data()[j], want[j], domain.step()) << j;
}

TEST_F(RoundEngineSecAggTest, TooFewClientsFailTheAttemptAndPlaintextUpdatesAreRefused) {
  RoundConfig c = Config(4);
  c.max_round_attempts = 1;
  Make(c, 4);
  engine_->OnTick(now_);
  UpdateSubmission plain;
  plain.round = 1;
  EXPECT_NE(engine_->OnUpdate("edge-0", plain, now_).message().find("uses secure aggregation"),
            std::string::npos);
  Play({"edge-0", "edge-1"});  // two of four advertise keys: fewer than secagg.min_clients
  now_ += 5s;
  engine_->OnTick(now_);
  ASSERT_EQ(log_.failures.size(), 1u);
  EXPECT_NE(log_.failures[0].find("secure aggregation: 2 clients advertised keys"),
            std::string::npos)
      << log_.failures[0];
  EXPECT_TRUE(engine_->finished());
  EXPECT_FALSE(engine_->failure().ok());
  // The two that never advertised keys cool down; the two that did, though the attempt failed,
  // do not.
  EXPECT_GT(engine_->registry().CoolingUntil("edge-0"), 0u);
  EXPECT_GT(engine_->registry().CoolingUntil("edge-1"), 0u);
  EXPECT_EQ(engine_->registry().CoolingUntil("edge-2"), 0u);
  EXPECT_EQ(engine_->registry().CoolingUntil("edge-3"), 0u);
}

TEST_F(RoundEngineSecAggTest, RulesThatNeedEachUpdateAndPerClientCodecsAreRefusedSayingWhy) {
  RoundConfig c = Config(3);
  ModelWeights init = *ModelWeights::Create({{"w", {4}}});
  Result<std::unique_ptr<RoundEngine>> median =
      RoundEngine::Create(c, *MakeStrategy("median"), init);
  ASSERT_FALSE(median.ok());
  EXPECT_NE(median.status().message().find("compares the clients' updates"), std::string::npos)
      << median.status();
  // Top-k, sign and zstd cannot go into a masked sum, each for its own reason.
  const std::map<std::string, std::string> refused = {
      {"topk(0.1)", "which ones they are would reveal its update"},
      {"randk(0.1)+sign", "one integer scale for everyone"},
      {"q8+zstd", "zstd cannot shrink them"}};
  for (const auto& [spec, why] : refused) {
    c.codec = spec;
    Status codec = c.Validate();
    ASSERT_FALSE(codec.ok()) << spec;
    EXPECT_NE(codec.message().find("cannot be used with secure aggregation"), std::string::npos)
        << codec;
    EXPECT_NE(codec.message().find(why), std::string::npos) << codec;
  }
  // Quantization and random-k feed the integer domain.
  for (const char* spec : {"dense", "q8", "q4", "randk(0.1)", "randk(k=3)+q8"}) {
    c.codec = spec;
    EXPECT_TRUE(c.Validate().ok()) << spec << ": " << c.Validate();
  }
  c.codec = "dense";
  c.secagg.degree = 10;
  c.secagg.threshold = 5;
  EXPECT_NE(c.Validate().message().find("must be a majority"), std::string::npos);
}

}  // namespace
}  // namespace tributary
