#include "client/secagg_task.h"

#include <fmt/format.h>

#include <cmath>

#include "compression/codec.h"
#include "compression/update_sink.h"
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
  std::FILE* f = std::fopen(cert.c_str(), "rb");
  if (!f) return Status::NotFound("cannot open the certificate " + cert);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0 && id->cert_pem.size() < (1 << 20))
    id->cert_pem.append(buf, n);
  std::fclose(f);
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
  IntDomainConfig dc;
  dc.clip = start.clip;
  dc.quant_bits = static_cast<int>(start.quant_bits);
  dc.max_weight = start.max_weight;
  dc.max_clients = start.max_clients;
  TRIB_ASSIGN_OR_RETURN(IntDomain domain, IntDomain::Create(dc));
  if (domain.sum_bits() != static_cast<int>(start.sum_bits))
    return Status::InvalidArgument(fmt::format(
        "secure aggregation: the coordinator says the sum has {} bits; its parameters give {}",
        start.sum_bits, domain.sum_bits()));
  if (start.vector_length < 1 || start.vector_length > (uint64_t{1} << 36))
    return Status::InvalidArgument("secure aggregation: a bad vector length");
  SecAggSession s;
  s.run_id = start.run_id;
  s.round = start.round;
  s.vector_length = start.vector_length;
  s.modulus_mask = domain.modulus_mask();
  s.degree = start.degree;
  s.threshold = start.threshold;
  s.min_clients = start.min_clients;
  if (!(start.dp_clip_norm >= 0.0 && start.dp_clip_norm <= 1e6) ||
      !(start.dp_noise_stddev >= 0.0 && start.dp_noise_stddev <= 1e9))
    return Status::InvalidArgument(fmt::format(
        "secure aggregation: bad differential privacy parameters (clip norm {}, noise {})",
        start.dp_clip_norm, start.dp_noise_stddev));
  std::shared_ptr<SecAggTask> task(new SecAggTask(s, domain, client_id, std::move(id)));
  task->dp_clip_norm_ = start.dp_clip_norm;
  task->dp_noise_stddev_ = start.dp_noise_stddev;
  task->dp_noise_seed_ = start.dp_noise_seed;
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
  if (dp_clip_norm_ > 0.0) {
    TRIB_RETURN_IF_ERROR(ClipAndNoise(delta, rounding_seed));
    weight = 1;
  }
  std::vector<uint64_t> encoded =
      domain_.Encode(delta, weight, DeriveSeed(rounding_seed, {kRoundingStream}));
  std::lock_guard<std::mutex> lock(mu_);
  input_ = std::move(encoded);
  return Status::Ok();
}

Status SecAggTask::ClipAndNoise(std::vector<float>& values, uint64_t rounding_seed) const {
  double sq = 0.0;
  for (float v : values) sq += static_cast<double>(v) * v;
  const double norm = std::sqrt(sq);
  if (!std::isfinite(norm))
    return Status::InvalidArgument("differential privacy: the update's norm is not finite");
  if (norm > dp_clip_norm_) {
    const float f = static_cast<float>(dp_clip_norm_ / norm);
    for (float& v : values) v *= f;
  }
  if (dp_noise_stddev_ == 0.0) return Status::Ok();
  if (dp_noise_seed_ != 0) {
    GaussianNoise::FromSeed(dp_noise_seed_, rounding_seed).AddTo(values, dp_noise_stddev_);
    return Status::Ok();
  }
  TRIB_ASSIGN_OR_RETURN(GaussianNoise noise, GaussianNoise::FromSecureRandom());
  noise.AddTo(values, dp_noise_stddev_);
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
