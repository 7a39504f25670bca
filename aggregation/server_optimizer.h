// ServerOptimizer: FedAvgM, FedAdagrad, FedAdam and FedYogi, the server-side optimizers of
// Reddi et al. 2021, "Adaptive Federated Optimization" (Algorithm 2), and Hsu et al. 2019
// (FedAvgM).
//
// Each round the client deltas are averaged exactly like FedAvg (the same streaming fixed-point
// WeightedMean, weighted by num_examples, O(model) memory), giving the pseudo-gradient
// delta = mean_i(w_i - x). Then, per coordinate:
//   fedavgm:    m = momentum * m + delta;                    x += server_lr * m
//   fedadagrad: m = beta1 * m + (1 - beta1) * delta;         v = v + delta^2
//   fedadam:    m = beta1 * m + (1 - beta1) * delta;         v = beta2 * v + (1 - beta2) * delta^2
//   fedyogi:    m = beta1 * m + (1 - beta1) * delta;
//               v = v - (1 - beta2) * delta^2 * sign(v - delta^2)
//   (adaptive)  x += server_lr * m / (sqrt(v) + tau)
// m starts at 0 and v at tau^2 (the paper's v_{-1} >= tau^2); there is no bias correction, as in
// the paper. m and v are computed in double and stored as float.
//
// State: SaveState returns the tensors "m" (every optimizer) and "v" (the adaptive ones), each of
// shape {model size}; before the first round it is empty. LoadState accepts what SaveState
// returned (or an empty state, which resets); a size that does not match the model is rejected by
// the next BeginRound with InvalidArgument. A failed Finalize leaves m and v unchanged.
//
// Not thread-safe.
#pragma once

#include <string>
#include <vector>

#include "aggregation/strategy.h"
#include "aggregation/weighted_mean.h"

namespace tributary {

class ServerOptimizer final : public Strategy {
 public:
  enum class Kind { kAvgM, kAdagrad, kAdam, kYogi };
  struct Params {
    double server_lr = 1.0;
    double momentum = 0.9;  // fedavgm
    double beta1 = 0.9;     // adaptive
    double beta2 = 0.99;    // fedadam, fedyogi
    double tau = 1e-3;      // adaptive
  };

  // Parameters are validated by MakeStrategy (strategy_factory.h).
  ServerOptimizer(Kind kind, const Params& params);

  std::string_view name() const override;
  Status BeginRound(const ModelWeights& global) override;
  Status Accumulate(uint64_t weight, const UpdateWriter& writer) override;
  Status AccumulateDense(uint64_t weight, std::span<const uint8_t> bytes, float scale) override;
  Status CheckUpdate(const UpdateStats& stats, uint64_t weight) const override {
    return mean_.CheckUpdate(stats, weight);
  }
  const PartialSum* partial_sum() const override { return &mean_.partial(); }
  Status MergePartialSum(const PartialSum& partial) override;
  size_t num_accumulated() const override { return mean_.count(); }
  Result<ModelWeights> Finalize() override;
  Result<ModelWeights> SaveState() const override;
  Status LoadState(const ModelWeights& state, size_t model_size) override;

 private:
  bool adaptive() const { return kind_ != Kind::kAvgM; }

  Kind kind_;
  Params p_;
  ModelWeights global_;
  WeightedMean mean_;
  std::vector<float> m_, v_;  // empty until the first Finalize (or LoadState)
  bool begun_ = false;
};

}  // namespace tributary
