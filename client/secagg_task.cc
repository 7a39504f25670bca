#include "client/secagg_task.h"

#include <fmt/format.h>

#include <cmath>

#include "compression/codec.h"
#include "compression/l2_clip.h"
#include "compression/update_sink.h"
#include "core/file_util.h"
#include "core/rng.h"
#include "privacy/dp/gaussian_noise.h"
#include "privacy/secagg/secagg_wire.h"

namespace tributary {
namespace {
constexpr uint64_t kRoundingStream = 0x5ecA66'0001;  // the stochastic rounding's seed stream
}  // namespace

Result<std::shared_ptr<const SecAggIdentity>> SecAggIdentity::FromFiles(const std::string& key,
                                                                        const std::string& cert,
                                                                        const std::string& ca) {
  auto id = std::make_shared<SecAggIdentity>();
  TRIB_ASSIGN_OR_RETURN(SigningKey k, SigningKey::FromPemFile(key));
  id->key = std::make_shared<const SigningKey>(std::move(k));
  TRIB_ASSIGN_OR_RETURN(CertificateVerifier v, CertificateVerifier::FromPemFile(ca));
  id->ca = std::make_shared<const CertificateVerifier>(std::move(v));
  // A PEM certificate chain is a few kB; 1 MiB bounds what a wrong path could make us read.
  Result<std::vector<uint8_t>> pem = ReadFileBytes(cert, uint64_t{1} << 20);
  if (!pem.ok()) return pem.status().WithContext("the secure-aggregation certificate");
  id->cert_pem.assign(pem->begin(), pem->end());
  return std::shared_ptr<const SecAggIdentity>(std::move(id));
}

SecAggTask::SecAggTask(SecAggSession session, IntDomain domain, const std::string& client_id,
                       std::shared_ptr<const SecAggIdentity> id)
    : round_(session.round),
      session_(session),
      values_(session.vector_length - 1),
      domain_(domain),
      identity_(std::move(id)),
      client_(session, client_id, identity_->key.get(), identity_->cert_pem, identity_->ca.get()) {}

Result<std::shared_ptr<SecAggTask>> SecAggTask::Create(const SecAggStartMsg& start,
                                                       const std::string& client_id,
                                                       std::shared_ptr<const SecAggIdentity> id) {
  if (!id || !id->key || !id->ca)
    return Status::FailedPrecondition(
        "this client cannot take part in secure aggregation: it has no signing key and CA");
  // The one mapping of the start message (privacy/secagg/secagg_start.h): the coordinator built
  // it from the same struct, so both sides derive the same k and t.
  TRIB_ASSIGN_OR_RETURN(SecAggStart s, FromWire(start));
  TRIB_ASSIGN_OR_RETURN(IntDomain domain, IntDomain::Create(s.domain));
  std::shared_ptr<SecAggTask> task(new SecAggTask(s.session, domain, client_id, std::move(id)));
  task->dp_ = s.dp;
  return task;
}

Result<SecAggKeysMsg> SecAggTask::Advertise() {
  std::lock_guard<std::mutex> lock(mu_);
  TRIB_ASSIGN_OR_RETURN(SecAggKeys k, client_.AdvertiseKeys());
  return ToWire(k, round_);
}

Result<SecAggSharesMsg> SecAggTask::Share(const SecAggRosterMsg& roster) {
  std::lock_guard<std::mutex> lock(mu_);
  TRIB_ASSIGN_OR_RETURN(SecAggRoster r, FromWire(roster));
  TRIB_ASSIGN_OR_RETURN(SecAggShares s, client_.ShareKeys(r));
  return ToWire(s, round_);
}

void SecAggTask::SetInbox(SecAggInboxMsg inbox) {
  std::lock_guard<std::mutex> lock(mu_);
  inbox_ = FromWire(inbox);
}

Status SecAggTask::SetUpdate(const UpdateSubmission& update, uint64_t rounding_seed) {
  const uint64_t n = update.update.num_floats;
  if (n < values_ || n > (uint64_t{1} << 32))
    return Status::InvalidArgument(
        fmt::format("secure aggregation: the update has {} values; the round sums {}", n, values_));
  TRIB_ASSIGN_OR_RETURN(std::unique_ptr<Codec> codec, MakeCodec(update.update.codec));
  TRIB_RETURN_IF_ERROR(codec->Validate(update.update.bytes.span(), n).status());
  std::vector<float> delta(n, 0.0f);
  BufferSink sink(delta);
  codec->DecodeInto(update.update.bytes.span(), sink, 1.0f);
  if (n > values_) {  // a sparse round: the values at the round's coordinates, in their order
    const std::vector<uint32_t> at = session_.Coordinates(n);
    std::vector<float> picked(at.size());
    for (size_t i = 0; i < at.size(); ++i) picked[i] = delta[at[i]];
    delta = std::move(picked);
  }
  uint64_t weight = domain_.Weight(update.num_examples);
  if (dp_.clip_norm > 0.0) {
    TRIB_RETURN_IF_ERROR(ClipAndNoise(delta, dp_, rounding_seed));
    weight = 1;
  }
  std::vector<uint64_t> encoded =
      domain_.Encode(delta, weight, DeriveSeed(rounding_seed, {kRoundingStream}));
  std::lock_guard<std::mutex> lock(mu_);
  input_ = std::move(encoded);
  task_id_ = update.task_id;
  model_version_ = update.model_version;
  return Status::Ok();
}

uint64_t SecAggTask::task_id() const {
  std::lock_guard<std::mutex> lock(mu_);
  return task_id_;
}

uint64_t SecAggTask::model_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return model_version_;
}

Status SecAggTask::ClipAndNoise(std::vector<float>& values, const DpOnClients& dp,
                                uint64_t rounding_seed) {
  // The one L2 clip (compression/l2_clip.h): the coordinator's clip of the same update gives the
  // same bits.
  TRIB_RETURN_IF_ERROR(ClipL2(values, dp.clip_norm).status().WithContext("differential privacy"));
  if (dp.noise_stddev == 0.0) return Status::Ok();
  if (dp.noise_seed != 0) {
    GaussianNoise::FromSeed(dp.noise_seed, rounding_seed).AddTo(values, dp.noise_stddev);
    return Status::Ok();
  }
  TRIB_ASSIGN_OR_RETURN(GaussianNoise noise, GaussianNoise::FromSecureRandom());
  noise.AddTo(values, dp.noise_stddev);
  return Status::Ok();
}

bool SecAggTask::TryClaimMask() {
  std::lock_guard<std::mutex> lock(mu_);
  if (claimed_ || !inbox_ || !input_) return false;
  claimed_ = true;
  return true;
}

Result<SecAggMaskedInputMsg> SecAggTask::Mask() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!inbox_ || !input_) return Status::FailedPrecondition("secure aggregation: nothing to mask");
  TRIB_ASSIGN_OR_RETURN(SecAggMaskedInput y, client_.MaskInput(*inbox_, *input_));
  input_.reset();
  return ToWire(y, round_, domain_.sum_bits());
}

Result<SecAggUnmaskResponseMsg> SecAggTask::Unmask(const SecAggUnmaskRequestMsg& request) {
  std::lock_guard<std::mutex> lock(mu_);
  TRIB_ASSIGN_OR_RETURN(SecAggUnmaskResponse r, client_.Unmask(FromWire(request)));
  return ToWire(r, round_);
}

}  // namespace tributary
