#include "sim/attack.h"

#include <fmt/format.h>

#include <boost/math/distributions/normal.hpp>
#include <cmath>

#include "core/rng.h"

namespace tributary {
namespace {

constexpr uint64_t kMaliciousStream = 0xbad;
constexpr uint64_t kNoiseStream = 0x9a55;

Status Bad(const char* key, const std::string& why) {
  return Status::InvalidArgument(fmt::format("key '{}' {}", key, why));
}

}  // namespace

AttackKind AttackConfig::parsed_kind() const {
  if (kind == "sign_flip") return AttackKind::kSignFlip;
  if (kind == "gaussian") return AttackKind::kGaussian;
  if (kind == "scale") return AttackKind::kScale;
  if (kind == "label_flip") return AttackKind::kLabelFlip;
  if (kind == "alie") return AttackKind::kAlie;
  return AttackKind::kNone;
}

double AttackConfig::effective_scale() const {
  if (scale > 0.0) return scale;
  return parsed_kind() == AttackKind::kScale ? 10.0 : 4.0;
}

double AttackConfig::effective_noise_std() const { return noise_std > 0.0 ? noise_std : 1.0; }

Status AttackConfig::Validate() const {
  const AttackKind k = parsed_kind();
  if (k == AttackKind::kNone && kind != "none")
    return Bad("attack.kind", "= '" + kind +
                                  "' is unknown; use none, sign_flip, gaussian, scale, "
                                  "label_flip or alie");
  if (!(fraction >= 0.0) || !(fraction < 1.0))
    return Bad("attack.fraction", fmt::format("= {} must be in [0, 1)", fraction));
  if (k == AttackKind::kNone && fraction > 0.0)
    return Bad("attack.kind", "must name an attack when attack.fraction > 0");
  if (k != AttackKind::kNone && fraction == 0.0)
    return Bad("attack.fraction", "must be > 0 when attack.kind = '" + kind + "'");
  if (!(scale >= 0.0) || !std::isfinite(scale))
    return Bad("attack.scale", fmt::format("= {} must be > 0 (0: the kind's default)", scale));
  if (scale > 0.0 && k != AttackKind::kSignFlip && k != AttackKind::kScale)
    return Bad("attack.scale",
               "applies to attack.kind sign_flip and scale only, not '" + kind + "'");
  if (!(noise_std >= 0.0) || !std::isfinite(noise_std))
    return Bad("attack.noise_std", fmt::format("= {} must be > 0 (0: 1)", noise_std));
  if (noise_std > 0.0 && k != AttackKind::kGaussian)
    return Bad("attack.noise_std", "applies to attack.kind gaussian only, not '" + kind + "'");
  if (!(alie_z >= 0.0) || !std::isfinite(alie_z))
    return Bad("attack.alie_z", fmt::format("= {} must be >= 0 (0: z_max)", alie_z));
  if (alie_z > 0.0 && k != AttackKind::kAlie)
    return Bad("attack.alie_z", "applies to attack.kind alie only, not '" + kind + "'");
  return Status::Ok();
}

bool IsMaliciousClient(uint64_t seed, uint64_t client, double fraction) {
  if (fraction <= 0.0) return false;
  return Rng::Stream(seed, {kMaliciousStream, client}).Uniform() < fraction;
}

void FlipLabels(Dataset* data) {
  for (uint8_t& y : data->labels) y = static_cast<uint8_t>(data->num_classes - 1 - y);
}

double AlieZMax(int64_t n, int64_t f) {
  if (f <= 0 || n <= 0) return 0.0;
  const int64_t s = std::max<int64_t>(1, n / 2 + 1 - f);
  const double p = static_cast<double>(n - s) / static_cast<double>(n);
  if (p <= 0.5) return 0.0;
  return boost::math::quantile(boost::math::normal_distribution<double>(), p);
}

std::vector<float> AlieDelta(std::span<const std::vector<float>> honest, double z) {
  if (honest.empty()) return {};
  const size_t d = honest[0].size();
  const double m = static_cast<double>(honest.size());
  std::vector<float> out(d);
  for (size_t j = 0; j < d; ++j) {
    double sum = 0.0;
    for (const auto& h : honest) sum += h[j];
    const double mu = sum / m;
    double var = 0.0;
    for (const auto& h : honest) var += (h[j] - mu) * (h[j] - mu);
    out[j] = static_cast<float>(mu - z * std::sqrt(var / m));
  }
  return out;
}

AttackTrainer::AttackTrainer(std::shared_ptr<Trainer> inner, const AttackConfig& config,
                             int64_t num_examples)
    : inner_(std::move(inner)),
      kind_(config.parsed_kind()),
      scale_(config.effective_scale()),
      noise_std_(config.effective_noise_std()),
      num_examples_(num_examples) {}

AttackTrainer::AttackTrainer(std::shared_ptr<Trainer> inner,
                             std::shared_ptr<const std::vector<float>> delta, Metrics metrics,
                             int64_t num_examples)
    : inner_(std::move(inner)),
      kind_(AttackKind::kAlie),
      delta_(std::move(delta)),
      metrics_(std::move(metrics)),
      num_examples_(num_examples) {}

Result<FitResult> AttackTrainer::fit(const ModelWeights& global, const FitConfig& config) {
  switch (kind_) {
    case AttackKind::kSignFlip:
    case AttackKind::kScale: {
      TRIB_ASSIGN_OR_RETURN(FitResult r, inner_->fit(global, config));
      if (r.weights.size() != global.size())
        return Status::Internal("attack: the honest fit returned a model of another size");
      const float factor = static_cast<float>(kind_ == AttackKind::kSignFlip ? -scale_ : scale_);
      std::span<float> w = r.weights.data();
      std::span<const float> g = global.data();
      for (size_t i = 0; i < w.size(); ++i) w[i] = g[i] + factor * (w[i] - g[i]);
      return r;
    }
    case AttackKind::kGaussian: {
      FitResult r;
      r.weights = global;
      r.num_examples = num_examples_;
      Rng rng = Rng::Stream(config.seed, {kNoiseStream});
      for (float& x : r.weights.data()) x += static_cast<float>(noise_std_ * rng.Normal());
      return r;
    }
    case AttackKind::kAlie: {
      if (!delta_ || delta_->size() != global.size())
        return Status::Internal("attack: the crafted ALIE delta does not match the model's size");
      FitResult r;
      r.weights = global;
      r.num_examples = num_examples_;
      r.metrics = metrics_;
      std::span<float> w = r.weights.data();
      for (size_t i = 0; i < w.size(); ++i) w[i] += (*delta_)[i];
      return r;
    }
    case AttackKind::kNone:
    case AttackKind::kLabelFlip:
      break;
  }
  return inner_->fit(global, config);
}

Result<FitResult> RecordingTrainer::fit(const ModelWeights& global, const FitConfig& config) {
  TRIB_ASSIGN_OR_RETURN(FitResult r, inner_->fit(global, config));
  if (r.weights.size() != global.size())
    return Status::Internal("attack: the honest fit returned a model of another size");
  std::span<const float> w = r.weights.data(), g = global.data();
  delta_.resize(w.size());
  for (size_t i = 0; i < w.size(); ++i) delta_[i] = w[i] - g[i];
  metrics_ = r.metrics;
  return r;
}

}  // namespace tributary
