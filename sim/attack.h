// Attacks: a configurable fraction of malicious virtual clients, for robustness experiments.
//
// A client is malicious iff a uniform draw from (seed, client index) is below attack.fraction, so
// nothing is stored per client and the same clients are malicious in every round and whatever the
// thread count. A malicious client still runs the real client path (TaskExecutor -> codec -> wire):
// an Attack changes its data (WrapData) or wraps its honest Trainer (WrapTrainer) so that fit()
// returns global + crafted delta, which the executor computes and sends. MakeAttack builds the
// attack attack.kind names, from a table; the simulator knows only the interface.
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
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/thread_pool.h"
#include "train/data/dataset.h"
#include "tributary/status.h"
#include "tributary/trainer.h"

namespace tributary {

struct AttackConfig {
  std::string kind = "none";
  double fraction = 0.0;
  double scale = 0.0;      // 0: the kind's default (sign_flip 4, scale 10)
  double noise_std = 0.0;  // 0: 1
  double alie_z = 0.0;     // 0: z_max from n and f

  // InvalidArgument naming the key: an unknown kind, a value out of range, a kind without a
  // fraction (or a fraction without a kind), or a parameter set for a kind that does not use it.
  Status Validate() const;
};

// What a malicious client does. The simulator calls, for each round attempt: Prepare (once, before
// anyone trains), then for each malicious selected client WrapData on its examples (when it has
// any) and WrapTrainer on its honest trainer. Prepare runs on the simulator's thread; WrapData and
// WrapTrainer may run concurrently on pool threads (they are const).
class Attack {
 public:
  virtual ~Attack() = default;

  // The attempt's malicious clients, in selection order, and its selection size.
  struct Attempt {
    int64_t selected = 0;
    std::vector<uint64_t> malicious;
  };
  // A malicious client's honest update this attempt (through the real client path): the delta
  // it would have sent and its metrics.
  struct HonestFit {
    std::vector<float> delta;
    Metrics metrics;
  };
  using FitHonestly = std::function<Result<HonestFit>(uint64_t client)>;

  virtual Status Prepare(const Attempt& /*attempt*/, ThreadPool& /*pool*/,
                         const FitHonestly& /*fit*/) {
    return Status::Ok();
  }
  // Whether WrapData changes the data (an attack that needs a training trainer).
  virtual bool changes_data() const { return false; }
  virtual void WrapData(Dataset& /*data*/) const {}
  // `num_examples` is what the client reports when the attack does not train.
  virtual std::shared_ptr<Trainer> WrapTrainer(std::shared_ptr<Trainer> honest, uint64_t client,
                                               int64_t num_examples) const {
    (void)client;
    (void)num_examples;
    return honest;
  }
};

// The attack `config.kind` names (after Validate); null for "none".
Result<std::unique_ptr<Attack>> MakeAttack(const AttackConfig& config);
// The kinds MakeAttack knows, "none" first.
std::vector<std::string> AttackKinds();

// Whether `client` is malicious: Uniform(seed, client) < fraction.
bool IsMaliciousClient(uint64_t seed, uint64_t client, double fraction);

// Maps every label y to num_classes - 1 - y.
void FlipLabels(Dataset* data);

// The paper's z_max for n clients of which f are malicious (see above); 0 when f == 0.
double AlieZMax(int64_t n, int64_t f);

// mu - z * sigma over the coordinates of `honest` (each of the same length, at least one);
// computed in double, in the order given.
std::vector<float> AlieDelta(std::span<const std::vector<float>> honest, double z);

// A Trainer decorator that passes fit() through and keeps the delta (fit - global) and metrics, so
// the simulator can learn an attacker's honest update from the real client path (TaskExecutor
// decodes the task's model however it was sent). Thread-compatible.
class RecordingTrainer final : public Trainer {
 public:
  explicit RecordingTrainer(std::shared_ptr<Trainer> inner) : inner_(std::move(inner)) {}

  Result<ModelWeights> get_parameters() override { return inner_->get_parameters(); }
  bool applies_correction() const override { return inner_->applies_correction(); }
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
