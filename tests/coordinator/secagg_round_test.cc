// SecAggRound against real SecAggClients through the wire messages, with time passed in: phases
// end when every awaited client answered or at their deadlines; the result is the weighted mean of
// the survivors; too few clients fail the attempt with the reason; messages out of place are
// refused without harm.
#include "coordinator/secagg_round.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>

#include "crypto/cert_authority.h"
#include "crypto/signing.h"
#include "privacy/secagg/secagg_client.h"
#include "privacy/secagg/secagg_wire.h"

namespace tributary {
namespace {

using namespace std::chrono_literals;

struct Party {
  std::string id;
  PemPair cert;
  std::unique_ptr<SigningKey> key;
  std::unique_ptr<SecAggClient> client;
  std::vector<float> x;
  uint64_t weight = 0;
};

class SecAggRoundTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ca_ = *MakeCaCertificate("Round CA");
    verifier_ = std::make_unique<CertificateVerifier>(*CertificateVerifier::FromPem(ca_.cert_pem));
  }

  // n parties with random updates of `dim` values and weights 100, 200, ...
  void MakeParties(size_t n, size_t dim) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> val(-0.3f, 0.3f);
    for (size_t i = 0; i < n; ++i) {
      Party p;
      p.id = "edge-" + std::to_string(i);
      p.cert = *MakeClientCertificate(ca_, p.id);
      p.key = std::make_unique<SigningKey>(*SigningKey::FromPem(p.cert.key_pem));
      p.x.resize(dim);
      for (float& v : p.x) v = val(rng);
      p.weight = 100 * (i + 1);
      parties_.push_back(std::move(p));
    }
  }

  std::unique_ptr<SecAggRound> StartRound(size_t dim) {
    SecAggRound::Options o;
    o.domain.clip = 0.5f;
    o.domain.quant_bits = 10;
    o.domain.max_weight = 4096;
    o.domain.max_clients = parties_.size();
    const IntDomain domain = *IntDomain::Create(o.domain);
    o.session.run_id = "run-x";
    o.session.round = 2;
    o.session.vector_length = dim + 1;
    o.session.modulus_mask = domain.modulus_mask();
    o.phase_timeout = 5s;
    std::vector<std::string> selected;
    for (const Party& p : parties_) selected.push_back(p.id);
    Result<std::unique_ptr<SecAggRound>> r = SecAggRound::Start(o, selected, t0_, t0_ + 60s);
    EXPECT_TRUE(r.ok()) << r.status();
    for (Party& p : parties_)
      p.client = std::make_unique<SecAggClient>(o.session, p.id, p.key.get(), p.cert.cert_pem,
                                                verifier_.get());
    domain_ = std::make_unique<IntDomain>(domain);
    return std::move(*r);
  }

  Party& Of(const std::string& id) {
    for (Party& p : parties_)
      if (p.id == id) return p;
    ADD_FAILURE() << id;
    return parties_[0];
  }

  // Delivers the round's outbox to the clients not in `silent`, and their answers back.
  void Pump(SecAggRound& r, const std::set<std::string>& silent, TimePoint now) {
    for (int step = 0; step < 8; ++step) {
      std::vector<SecAggRound::Outgoing> out = r.TakeOutbox();
      if (out.empty()) return;
      for (SecAggRound::Outgoing& o : out) {
        if (silent.count(o.client_id)) continue;
        Party& p = Of(o.client_id);
        if (std::holds_alternative<SecAggStartMsg>(o.message)) {
          EXPECT_EQ(std::get<SecAggStartMsg>(o.message).sum_bits,
                    static_cast<uint32_t>(domain_->sum_bits()));
          ASSERT_TRUE(r.OnKeys(p.id, ToWire(*p.client->AdvertiseKeys(), 2), now).ok());
        } else if (auto* roster = std::get_if<SecAggRosterMsg>(&o.message)) {
          Result<SecAggShares> s = p.client->ShareKeys(*FromWire(*roster));
          ASSERT_TRUE(s.ok()) << s.status();
          ASSERT_TRUE(r.OnShares(p.id, ToWire(*s, 2), now).ok());
        } else if (auto* inbox = std::get_if<SecAggInboxMsg>(&o.message)) {
          Result<SecAggMaskedInput> y =
              p.client->MaskInput(FromWire(*inbox), domain_->Encode(p.x, p.weight, 7));
          ASSERT_TRUE(y.ok()) << y.status();
          ASSERT_TRUE(r.OnMaskedInput(p.id, ToWire(*y, 2, domain_->sum_bits()), now).ok());
        } else if (auto* req = std::get_if<SecAggUnmaskRequestMsg>(&o.message)) {
          Result<SecAggUnmaskResponse> u = p.client->Unmask(FromWire(*req));
          ASSERT_TRUE(u.ok()) << u.status();
          ASSERT_TRUE(r.OnUnmaskResponse(p.id, ToWire(*u, 2), now).ok());
        }
      }
    }
  }

  std::vector<double> ExpectedMean(const std::set<std::string>& left_out) const {
    std::vector<double> mean(parties_[0].x.size(), 0.0);
    double total = 0;
    for (const Party& p : parties_) {
      if (left_out.count(p.id)) continue;
      total += static_cast<double>(p.weight);
      for (size_t i = 0; i < mean.size(); ++i) mean[i] += static_cast<double>(p.weight) * p.x[i];
    }
    for (double& m : mean) m /= total;
    return mean;
  }

  PemPair ca_;
  std::unique_ptr<CertificateVerifier> verifier_;
  std::vector<Party> parties_;
  std::unique_ptr<IntDomain> domain_;
  const TimePoint t0_{};
};

TEST_F(SecAggRoundTest, EveryoneAnsweringEndsEachPhaseAtOnceWithTheWeightedMean) {
  MakeParties(8, 50);
  std::unique_ptr<SecAggRound> r = StartRound(50);
  Pump(*r, {}, t0_ + 1s);
  ASSERT_EQ(r->state(), SecAggRound::State::kDone) << r->failure();
  EXPECT_EQ(r->total_weight(), 3600u);  // 100 + 200 + ... + 800
  EXPECT_EQ(r->survivors().size(), 8u);
  const std::vector<double> want = ExpectedMean({});
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(r->mean()[i], want[i], domain_->step());
  EXPECT_GT(r->masked_bytes_up(), 8u * 51u * domain_->sum_bits() / 8u);
  EXPECT_GT(r->protocol_bytes_down(), 0u);
}

TEST_F(SecAggRoundTest, SilentClientsAreLeftBehindAtEachDeadline) {
  MakeParties(9, 20);
  std::unique_ptr<SecAggRound> r = StartRound(20);
  // edge-8 never answers at all: the advertise phase ends at its deadline, without it.
  Pump(*r, {"edge-8"}, t0_ + 1s);
  EXPECT_EQ(r->state(), SecAggRound::State::kRunning);
  EXPECT_EQ(r->next_deadline(), t0_ + 5s);
  r->OnTick(t0_ + 5s);
  Pump(*r, {"edge-8"}, t0_ + 6s);
  ASSERT_EQ(r->state(), SecAggRound::State::kDone) << r->failure();
  EXPECT_EQ(r->survivors().size(), 8u);
  const std::vector<double> want = ExpectedMean({"edge-8"});
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(r->mean()[i], want[i], domain_->step());
}

TEST_F(SecAggRoundTest, TooFewClientsFailTheAttemptWithTheReason) {
  MakeParties(6, 10);
  std::unique_ptr<SecAggRound> r = StartRound(10);
  Pump(*r, {"edge-0", "edge-1", "edge-2", "edge-3"}, t0_ + 1s);
  r->OnTick(t0_ + 5s);
  ASSERT_EQ(r->state(), SecAggRound::State::kFailed);
  EXPECT_EQ(r->failure().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r->failure().message().find("2 clients advertised keys"), std::string::npos)
      << r->failure();
  EXPECT_FALSE(r->next_deadline().has_value());
}

TEST_F(SecAggRoundTest, MessagesOutOfPlaceAreRefusedAndChangeNothing) {
  MakeParties(5, 10);
  std::unique_ptr<SecAggRound> r = StartRound(10);
  SecAggKeys k = *Of("edge-0").client->AdvertiseKeys();
  Status other_round = r->OnKeys("edge-0", ToWire(k, 3), t0_);
  EXPECT_NE(other_round.message().find("for round 3; this is round 2"), std::string::npos)
      << other_round;
  Status impostor = r->OnKeys("edge-1", ToWire(k, 2), t0_);
  EXPECT_EQ(impostor.code(), StatusCode::kPermissionDenied);
  Status early = r->OnMaskedInput("edge-0", SecAggMaskedInputMsg{2, 1, 0, {}}, t0_);
  EXPECT_NE(early.message().find("arrived in phase 'advertise keys'"), std::string::npos) << early;
  Status stranger = r->OnKeys("edge-77", SecAggKeysMsg{2, "edge-77", {}, {}, "", {}}, t0_);
  EXPECT_NE(stranger.message().find("does not wait for"), std::string::npos) << stranger;
  ASSERT_TRUE(r->OnKeys("edge-0", ToWire(k, 2), t0_).ok());
  EXPECT_FALSE(r->OnKeys("edge-0", ToWire(k, 2), t0_).ok());  // twice
  EXPECT_EQ(r->state(), SecAggRound::State::kRunning);
}

}  // namespace
}  // namespace tributary
