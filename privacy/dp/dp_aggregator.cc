#include "privacy/dp/dp_aggregator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "compression/l2_clip.h"
#include "compression/update_sink.h"

namespace tributary {
namespace {

constexpr double kFixedOne = FixedPointSink::kOne;
constexpr uint64_t kCountStream = uint64_t{1} << 63;  // the adaptive count's noise, per round

}  // namespace

Result<std::unique_ptr<DpAggregator>> DpAggregator::Create(const DpConfig& config,
                                                           int64_t clients_per_round) {
  TRIB_RETURN_IF_ERROR(config.Validate(clients_per_round));
  std::unique_ptr<DpAggregator> a(new DpAggregator());
  a->config_ = config;
  a->expected_ = config.ExpectedClients(clients_per_round);
  a->z_update_ = config.UpdateNoiseMultiplier(clients_per_round);
  a->count_noise_ = config.CountNoise(clients_per_round);
  a->delta_ = config.EffectiveDelta();
  a->clip_ = config.clip_norm;
  return a;
}

void DpAggregator::BeginRound(size_t dim) {
  sum_.Reset(dim);
  scratch_.assign(dim, 0.0f);
  added_ = unclipped_ = clipped_ = 0;
  norm_sum_ = 0.0;
  noised_on_clients_ = false;
}

Result<double> DpAggregator::AddUpdate(const DpUpdateWriter& writer) {
  std::fill(scratch_.begin(), scratch_.end(), 0.0f);
  BufferSink decoded(scratch_);
  writer(decoded, 1.0f);
  // The one L2 clip (compression/l2_clip.h): the same bits as a client's (dp.placement = client).
  Result<L2Clip> clip = ClipL2(scratch_, clip_);
  if (!clip.ok()) return clip.status().WithContext("differential privacy");
  // Every clipped value is at most C <= 1e6 in magnitude, far inside the fixed point's 2^30.
  FixedPointSink sink(sum_);
  sink.AddDense(0, scratch_, 1.0f);
  ++added_;
  (clip->clipped ? clipped_ : unclipped_) += 1;
  norm_sum_ += clip->norm;
  return clip->norm;
}

Status DpAggregator::AddNoisedSum(std::span<const float> mean, uint64_t count) {
  if (mean.size() != sum_.size())
    return Status::InvalidArgument(
        fmt::format("differential privacy: the aggregate has {} values, the model {}", mean.size(),
                    sum_.size()));
  for (float v : mean)
    if (!std::isfinite(v) || !(std::abs(static_cast<double>(v) * static_cast<double>(count)) <
                               FixedPointSink::kMaxFixedPointTerm))
      return Status::InvalidArgument("differential privacy: the aggregate is out of range");
  FixedPointSink sink(sum_, count);
  sink.AddDense(0, mean, 1.0f);
  added_ += static_cast<int64_t>(count);
  noised_on_clients_ = true;
  return Status::Ok();
}

Result<GaussianNoise> DpAggregator::NoiseFor(uint64_t round) const {
  if (config_.noise_seed != 0) return GaussianNoise::FromSeed(config_.noise_seed, round);
  return GaussianNoise::FromSecureRandom();
}

Result<std::vector<float>> DpAggregator::Release(uint64_t round, double q) {
  TRIB_ASSIGN_OR_RETURN(GaussianNoise noise, NoiseFor(round));
  const double stddev = z_update_ * clip_;
  std::vector<float> out(sum_.size());
  const bool add_noise = !noised_on_clients_ && stddev > 0.0;
  for (size_t i = 0; i < sum_.size(); ++i) {
    double v = static_cast<double>(sum_.At(i)) / kFixedOne;
    if (add_noise) v += stddev * noise.Next();
    out[i] = static_cast<float>(v / expected_);
  }
  last_ = DpRoundReport{};
  last_.clip_norm = clip_;
  last_.noise_stddev = config_.client_placement() ? config_.noise_multiplier * clip_ : stddev;
  last_.sampling_rate = q;
  last_.clipped = clipped_;
  last_.mean_update_norm = added_ > 0 && !noised_on_clients_ ? norm_sum_ / added_ : 0.0;
  if (config_.adaptive()) {
    // Andrew et al. 2021, Algorithm 1: the noisy fraction of updates at most C moves C
    // geometrically towards the target quantile.
    GaussianNoise count_noise =
        config_.noise_seed != 0 ? GaussianNoise::FromSeed(config_.noise_seed, round | kCountStream)
                                : std::move(noise);
    const double b =
        (static_cast<double>(unclipped_) + count_noise_ * count_noise.Next()) / expected_;
    clip_ *= std::exp(-config_.adaptive_lr * (b - config_.adaptive_quantile));
    clip_ = std::clamp(clip_, 1e-6, 1e6);
  }
  accountant_.Compose(config_.sampling_mode(), q, AccountedMultiplier());
  const PrivacySpent spent = accountant_.Spent(delta_);
  last_.epsilon = spent.epsilon;
  last_.order = spent.order;
  return out;
}

PrivacySpent DpAggregator::Spent() const { return accountant_.Spent(delta_); }

PrivacySpent DpAggregator::SpentWithOneMore(double q) const {
  RdpAccountant next = accountant_;
  next.Compose(config_.sampling_mode(), q, AccountedMultiplier());
  return next.Spent(delta_);
}

double DpAggregator::AccountedMultiplier() const {
  // Replace-one adjacency (fixed-size sampling) moves the clipped sum by up to 2C.
  const double z = config_.noise_multiplier;
  return config_.sampling_mode() == DpSampling::kFixedSize ? z / 2.0 : z;
}

std::string DpAggregator::SaveState() const {
  nlohmann::json j;
  j["clip_norm"] = clip_;
  j["steps"] = accountant_.steps();
  j["orders"] = accountant_.orders();
  // JSON has no infinity: an unbounded order (no noise) is written as the string "inf".
  nlohmann::json rdp = nlohmann::json::array();
  for (double v : accountant_.rdp())
    rdp.push_back(std::isfinite(v) ? nlohmann::json(v) : nlohmann::json("inf"));
  j["rdp"] = std::move(rdp);
  return j.dump();
}

Status DpAggregator::LoadState(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto bad = [](const std::string& what) {
    return Status::InvalidArgument("the checkpoint's privacy state: " + what);
  };
  if (!j.is_object() || !j.contains("clip_norm") || !j["clip_norm"].is_number() ||
      !j.contains("steps") || !j["steps"].is_number_integer() || !j.contains("orders") ||
      !j["orders"].is_array() || !j.contains("rdp") || !j["rdp"].is_array())
    return bad("not an object with clip_norm, steps, orders and rdp");
  const double clip = j["clip_norm"].get<double>();
  if (!(clip > 0.0) || !std::isfinite(clip)) return bad(fmt::format("clip_norm {}", clip));
  std::vector<double> orders, rdp;
  for (const auto& v : j["orders"]) {
    if (!v.is_number()) return bad("an order is not a number");
    orders.push_back(v.get<double>());
  }
  for (const auto& v : j["rdp"]) {
    if (v.is_string() && v.get<std::string>() == "inf") {
      rdp.push_back(std::numeric_limits<double>::infinity());
      continue;
    }
    if (!v.is_number()) return bad("an RDP value is not a number");
    rdp.push_back(v.get<double>());
  }
  RdpAccountant restored;
  TRIB_RETURN_IF_ERROR(restored.FromState(orders, rdp, j["steps"].get<int64_t>()));
  accountant_ = std::move(restored);
  clip_ = clip;
  return Status::Ok();
}

}  // namespace tributary
