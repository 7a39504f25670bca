// Attacks: a configurable fraction of malicious virtual clients, for robustness experiments.
//
// A client is malicious iff a uniform draw from (seed, client index) is below attack.fraction, so
// nothing is stored per client and the same clients are malicious in every round and whatever the
// thread count. A malicious client still runs the real client path (TaskExecutor -> codec -> wire):
// AttackTrainer wraps its honest Trainer and rewrites the weights fit() returns to
// global + crafted delta, so the executor computes and sends the crafted delta.
//
//   attack.kind       what a malicious client submits, with h its honest delta this round:
//     "none"          nothing (the default)
//     "sign_flip"     -scale * h                (attack.scale, default 4: with 20% malicious,
//                                                FedAvg's mean is 0.8 h - 0.8 h, i.e. no progress)
//     "gaussian"      N(0, noise_std^2) per coordinate, no training (attack.noise_std, default 1);
//                     it reports no train_loss
//     "scale"         scale * h: scaled model replacement, Bagdasaryan et al. 2020 (attack.scale,
//                     default 10)
//     "label_flip"    h trained on the client's examples with labels y -> C-1-y
//     "alie"          "A Little Is Enough" (Baruch et al. 2019): every malicious client selected in
//                     a round attempt submits mu - z * sigma, where mu and sigma are the
//                     coordinate-wise mean and (population) standard deviation of those clients'
//                     honest deltas this attempt. z = attack.alie_z, or when 0 the paper's z_max
//                     for n selected clients of which f are malicious: s = floor(n/2 + 1) - f,
//                     z = Phi^-1((n - s) / n) (s clamped to >= 1, z to >= 0).
//   attack.fraction   in [0, 1): the expected share of malicious clients (must be > 0 with a kind)
//   attack.scale      > 0, sign_flip and scale only (0: the kind's default)
//   attack.noise_std  > 0, gaussian only (0: the default, 1)
//   attack.alie_z     >= 0, alie only (0: z_max)
//
// Thread safety: the free functions and const methods may be called concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "train/data/dataset.h"
#include "tributary/status.h"
#include "tributary/trainer.h"

namespace tributary {

enum class AttackKind { kNone, kSignFlip, kGaussian, kScale, kLabelFlip, kAlie };

struct AttackConfig {
  std::string kind = "none";
  double fraction = 0.0;
  double scale = 0.0;      // 0: the kind's default (sign_flip 4, scale 10)
  double noise_std = 0.0;  // 0: 1
  double alie_z = 0.0;     // 0: z_max from n and f

  // InvalidArgument naming the key: an unknown kind, a value out of range, a kind without a
  // fraction (or a fraction without a kind), or a parameter set for a kind that does not use it.
  Status Validate() const;
  // The parsed kind; kNone when the kind is unknown (Validate reports that).
  AttackKind parsed_kind() const;
  // scale / noise_std with the defaults applied.
  double effective_scale() const;
  double effective_noise_std() const;
};

// Whether `client` is malicious: Uniform(seed, client) < fraction.
bool IsMaliciousClient(uint64_t seed, uint64_t client, double fraction);

// Maps every label y to num_classes - 1 - y.
void FlipLabels(Dataset* data);

// The paper's z_max for n clients of which f are malicious (see above); 0 when f == 0.
double AlieZMax(int64_t n, int64_t f);

// mu - z * sigma over the coordinates of `honest` (each of the same length, at least one);
// computed in double, in the order given.
std::vector<float> AlieDelta(std::span<const std::vector<float>> honest, double z);

// A Trainer decorator that makes an honest trainer's fit() submit an attack's delta.
//   sign_flip, scale   calls the inner fit, returns global + factor * (fit - global)
//   gaussian           does not train; returns global + N(0, std^2) noise seeded from the fit seed
//   alie               does not train; returns global + the crafted delta given at construction,
//                      with the honest metrics given
//   none, label_flip   the inner trainer unchanged (label_flip changes the data, not the fit)
// num_examples is what the client reports when it does not train (its honest count).
// Thread-compatible, like every Trainer.
class AttackTrainer final : public Trainer {
 public:
  AttackTrainer(std::shared_ptr<Trainer> inner, const AttackConfig& config, int64_t num_examples);
  // The ALIE form: submits `delta` (the model's size) with `metrics`.
  AttackTrainer(std::shared_ptr<Trainer> inner, std::shared_ptr<const std::vector<float>> delta,
                Metrics metrics, int64_t num_examples);

  Result<ModelWeights> get_parameters() override { return inner_->get_parameters(); }
  Result<FitResult> fit(const ModelWeights& global, const FitConfig& config) override;
  Result<EvalResult> evaluate(const ModelWeights& weights, const EvalConfig& config) override {
    return inner_->evaluate(weights, config);
  }

 private:
  std::shared_ptr<Trainer> inner_;
  AttackKind kind_ = AttackKind::kNone;
  double scale_ = 1.0, noise_std_ = 1.0;
  std::shared_ptr<const std::vector<float>> delta_;
  Metrics metrics_;
  int64_t num_examples_ = 0;
};

// A Trainer decorator that passes fit() through and keeps the delta (fit - global) and metrics, so
// the simulator can learn an attacker's honest update from the real client path (TaskExecutor
// decodes the task's model however it was sent). Thread-compatible.
class RecordingTrainer final : public Trainer {
 public:
  explicit RecordingTrainer(std::shared_ptr<Trainer> inner) : inner_(std::move(inner)) {}

  Result<ModelWeights> get_parameters() override { return inner_->get_parameters(); }
  Result<FitResult> fit(const ModelWeights& global, const FitConfig& config) override;
  Result<EvalResult> evaluate(const ModelWeights& weights, const EvalConfig& config) override {
    return inner_->evaluate(weights, config);
  }
  // The last fit's delta and metrics (empty before a fit).
  std::vector<float>& delta() { return delta_; }
  const Metrics& metrics() const { return metrics_; }

 private:
  std::shared_ptr<Trainer> inner_;
  std::vector<float> delta_;
  Metrics metrics_;
};

}  // namespace tributary
