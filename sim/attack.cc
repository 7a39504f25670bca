#include "sim/attack.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <future>
#include <map>

#include "core/config_schema.h"
#include "core/rng.h"

namespace tributary {
namespace {

constexpr uint64_t kMaliciousStream = 0xbad;
constexpr uint64_t kNoiseStream = 0x9a55;

}  // namespace

namespace {

// What each kind accepts and builds. `scale_default` > 0 for the kinds that take attack.scale.
struct Kind {
  const char* name;
  double scale_default;
  bool takes_noise_std;
  bool takes_alie_z;
  std::unique_ptr<Attack> (*make)(const AttackConfig& config);
};

// Returns global + factor * (honest fit - global): sign_flip (factor -scale) and scale (+scale).
class ScaledDeltaTrainer final : public Trainer {
 public:
  ScaledDeltaTrainer(std::shared_ptr<Trainer> inner, float factor)
      : inner_(std::move(inner)), factor_(factor) {}
  Result<ModelWeights> get_parameters() override { return inner_->get_parameters(); }
  bool applies_correction() const override { return inner_->applies_correction(); }
  Result<FitResult> fit(const ModelWeights& global, const FitConfig& config) override {
    TRIB_ASSIGN_OR_RETURN(FitResult r, inner_->fit(global, config));
    if (r.weights.size() != global.size())
      return Status::Internal("attack: the honest fit returned a model of another size");
    std::span<float> w = r.weights.data();
    std::span<const float> g = global.data();
    for (size_t i = 0; i < w.size(); ++i) w[i] = g[i] + factor_ * (w[i] - g[i]);
    return r;
  }
  Result<EvalResult> evaluate(const ModelWeights& w, const EvalConfig& c) override {
    return inner_->evaluate(w, c);
  }

 private:
  std::shared_ptr<Trainer> inner_;
  float factor_;
};

// Does not train: returns global + `delta`, or global + N(0, std^2) noise seeded by the fit seed
// when `delta` is null, reporting `num_examples` and `metrics`.
class CraftedTrainer final : public Trainer {
 public:
  CraftedTrainer(std::shared_ptr<Trainer> inner, std::shared_ptr<const std::vector<float>> delta,
                 double noise_std, Metrics metrics, int64_t num_examples)
      : inner_(std::move(inner)),
        delta_(std::move(delta)),
        noise_std_(noise_std),
        metrics_(std::move(metrics)),
        num_examples_(num_examples) {}
  Result<ModelWeights> get_parameters() override { return inner_->get_parameters(); }
  // It trains nothing, but claims the local steps an honest fit of its examples would take, so
  // that under SCAFFOLD it sends a control delta like everyone else's (made of its crafted delta).
  bool applies_correction() const override { return inner_->applies_correction(); }
  Result<FitResult> fit(const ModelWeights& global, const FitConfig& config) override {
    FitResult r;
    r.weights = global;
    r.num_examples = num_examples_;
    const int64_t batch = std::max(1, config.batch_size);
    r.steps =
        std::max(1, config.epochs) * ((std::max<int64_t>(num_examples_, 1) + batch - 1) / batch);
    if (config.max_steps > 0) r.steps = std::min(r.steps, config.max_steps);
    r.metrics = metrics_;
    std::span<float> w = r.weights.data();
    if (delta_) {
      if (delta_->size() != w.size())
        return Status::Internal("attack: the crafted delta does not match the model's size");
      for (size_t i = 0; i < w.size(); ++i) w[i] += (*delta_)[i];
    } else {
      Rng rng = Rng::Stream(config.seed, {kNoiseStream});
      for (float& x : w) x += static_cast<float>(noise_std_ * rng.Normal());
    }
    return r;
  }
  Result<EvalResult> evaluate(const ModelWeights& w, const EvalConfig& c) override {
    return inner_->evaluate(w, c);
  }

 private:
  std::shared_ptr<Trainer> inner_;
  std::shared_ptr<const std::vector<float>> delta_;
  double noise_std_;
  Metrics metrics_;
  int64_t num_examples_;
};

class ScaleAttack final : public Attack {
 public:
  explicit ScaleAttack(float factor) : factor_(factor) {}
  std::shared_ptr<Trainer> WrapTrainer(std::shared_ptr<Trainer> honest, uint64_t,
                                       int64_t) const override {
    return std::make_shared<ScaledDeltaTrainer>(std::move(honest), factor_);
  }

 private:
  float factor_;
};

class GaussianAttack final : public Attack {
 public:
  explicit GaussianAttack(double std) : std_(std) {}
  std::shared_ptr<Trainer> WrapTrainer(std::shared_ptr<Trainer> honest, uint64_t,
                                       int64_t num_examples) const override {
    // Reports no train_loss: it did not train.
    return std::make_shared<CraftedTrainer>(std::move(honest), nullptr, std_, Metrics{},
                                            num_examples);
  }

 private:
  double std_;
};

class LabelFlipAttack final : public Attack {
 public:
  bool changes_data() const override { return true; }
  void WrapData(Dataset& data) const override { FlipLabels(&data); }
};

// ALIE: the attempt's attackers' honest deltas, their mean minus z standard deviations.
class AlieAttack final : public Attack {
 public:
  explicit AlieAttack(double z) : z_(z) {}

  Status Prepare(const Attempt& attempt, ThreadPool& pool, const FitHonestly& fit) override {
    delta_.reset();
    metrics_.clear();
    if (attempt.malicious.empty()) return Status::Ok();
    std::vector<std::future<Result<HonestFit>>> fits;
    for (uint64_t client : attempt.malicious)
      fits.push_back(pool.Submit([&fit, client] { return fit(client); }));
    std::vector<std::vector<float>> honest;
    Status first_error;
    for (size_t i = 0; i < fits.size(); ++i) {
      Result<HonestFit> r = fits[i].get();
      if (!r.ok()) {
        if (first_error.ok()) first_error = r.status().WithContext("attack.kind 'alie' honest fit");
        continue;
      }
      honest.push_back(std::move(r->delta));
      metrics_[attempt.malicious[i]] = std::move(r->metrics);
    }
    TRIB_RETURN_IF_ERROR(first_error);
    const double z =
        z_ > 0.0 ? z_ : AlieZMax(attempt.selected, static_cast<int64_t>(attempt.malicious.size()));
    delta_ = std::make_shared<const std::vector<float>>(AlieDelta(honest, z));
    return Status::Ok();
  }

  std::shared_ptr<Trainer> WrapTrainer(std::shared_ptr<Trainer> honest, uint64_t client,
                                       int64_t num_examples) const override {
    auto it = metrics_.find(client);
    return std::make_shared<CraftedTrainer>(std::move(honest), delta_, 0.0,
                                            it != metrics_.end() ? it->second : Metrics{},
                                            num_examples);
  }

 private:
  double z_;
  std::shared_ptr<const std::vector<float>> delta_;
  std::map<uint64_t, Metrics> metrics_;
};

const Kind kKinds[] = {
    {"none", 0, false, false, [](const AttackConfig&) { return std::unique_ptr<Attack>(); }},
    {"sign_flip", 4.0, false, false,
     [](const AttackConfig& c) -> std::unique_ptr<Attack> {
       return std::make_unique<ScaleAttack>(-static_cast<float>(c.scale > 0 ? c.scale : 4.0));
     }},
    {"gaussian", 0, true, false,
     [](const AttackConfig& c) -> std::unique_ptr<Attack> {
       return std::make_unique<GaussianAttack>(c.noise_std > 0 ? c.noise_std : 1.0);
     }},
    {"scale", 10.0, false, false,
     [](const AttackConfig& c) -> std::unique_ptr<Attack> {
       return std::make_unique<ScaleAttack>(static_cast<float>(c.scale > 0 ? c.scale : 10.0));
     }},
    {"label_flip", 0, false, false,
     [](const AttackConfig&) -> std::unique_ptr<Attack> {
       return std::make_unique<LabelFlipAttack>();
     }},
    {"alie", 0, false, true,
     [](const AttackConfig& c) -> std::unique_ptr<Attack> {
       return std::make_unique<AlieAttack>(c.alie_z);
     }},
};

const Kind* FindKind(const std::string& name) {
  for (const Kind& k : kKinds)
    if (name == k.name) return &k;
  return nullptr;
}

}  // namespace

std::vector<std::string> AttackKinds() {
  std::vector<std::string> out;
  for (const Kind& k : kKinds) out.emplace_back(k.name);
  return out;
}

Status AttackConfig::Validate() const {
  const Kind* k = FindKind(kind);
  if (!k)
    return KeyError("attack.kind",
                    fmt::format("= '{}' is unknown; use {}", kind, fmt::join(AttackKinds(), ", ")));
  const bool none = kind == "none";
  if (!(fraction >= 0.0) || !(fraction < 1.0))
    return KeyError("attack.fraction", fmt::format("= {} must be in [0, 1)", fraction));
  if (none && fraction > 0.0)
    return KeyError("attack.kind", "must name an attack when attack.fraction > 0");
  if (!none && fraction == 0.0)
    return KeyError("attack.fraction", "must be > 0 when attack.kind = '" + kind + "'");
  if (!(scale >= 0.0) || !std::isfinite(scale))
    return KeyError("attack.scale", fmt::format("= {} must be > 0 (0: the kind's default)", scale));
  if (scale > 0.0 && k->scale_default == 0)
    return KeyError("attack.scale",
                    "applies to attack.kind sign_flip and scale only, not '" + kind + "'");
  if (!(noise_std >= 0.0) || !std::isfinite(noise_std))
    return KeyError("attack.noise_std", fmt::format("= {} must be > 0 (0: 1)", noise_std));
  if (noise_std > 0.0 && !k->takes_noise_std)
    return KeyError("attack.noise_std", "applies to attack.kind gaussian only, not '" + kind + "'");
  if (!(alie_z >= 0.0) || !std::isfinite(alie_z))
    return KeyError("attack.alie_z", fmt::format("= {} must be >= 0 (0: z_max)", alie_z));
  if (alie_z > 0.0 && !k->takes_alie_z)
    return KeyError("attack.alie_z", "applies to attack.kind alie only, not '" + kind + "'");
  return Status::Ok();
}

Result<std::unique_ptr<Attack>> MakeAttack(const AttackConfig& config) {
  TRIB_RETURN_IF_ERROR(config.Validate());
  return FindKind(config.kind)->make(config);
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
