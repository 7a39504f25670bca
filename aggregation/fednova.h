// FedNova (Wang, Liu, Liang, Joshi, Poor, "Tackling the Objective Inconsistency Problem in
// Heterogeneous Federated Optimization", NeurIPS 2020): normalized averaging. Clients that run
// more local steps move further; FedAvg then drifts towards their objectives. FedNova divides
// each client's delta by the length of its local run, averages the normalized deltas with the
// data weights p_i = n_i / sum n, and scales the mean back by the weighted mean length:
//
//   next = global + server_lr * tau_eff * sum_i p_i * delta_i / a_i,   tau_eff = sum_i p_i * a_i
//
// where a_i = ||a_i||_1 is the norm of client i's local-step coefficients: tau_i for plain SGD,
// and for SGD with momentum rho (PyTorch's form, as Tributary's engine and NIID-Bench use)
// (tau_i - rho * (1 - rho^tau_i) / (1 - rho)) / (1 - rho) (the paper's eq. for momentum).
//
// tau_i, the client's optimizer steps, is computed from its aggregation weight n_i (its
// num_examples, bounded by its Hello; run.max_weight, which would cap it, is refused) and the
// run's fit config, as
// Tributary's trainers take them: epochs * ceil(n_i / batch_size), at most fit.max_steps when that
// is set. A trainer that takes other steps (a Python trainer with its own loop) is normalized as
// if it had taken these.
//
// Streaming and exact like FedAvg: each delta is folded with its integer weight n_i and the scale
// 1 / a_i (one float, a function of n_i alone) into the fixed-point sum, and sum_i n_i * a_i is an
// exact integer sum of n_i * round(a_i * 2^20); so the result does not depend on the order the
// updates arrive in. It needs each update's own weight, so it is refused with secure aggregation
// and differential privacy (which show the coordinator one sum); with run.mode = "async" each
// step is a FedNova step over its buffer (the staleness weight multiplies each delta, as with
// FedAvg).
//
// Not thread-safe.
#pragma once

#include <cstdint>

#include "aggregation/strategy.h"
#include "aggregation/weighted_mean.h"

namespace tributary {

// The local training FedNova normalizes by: the run's fit config.
struct LocalSteps {
  int64_t epochs = 1;
  int64_t batch_size = 32;
  int64_t max_steps = 0;  // 0: no cap
  double momentum = 0.0;  // in [0, 1)

  // Optimizer steps of a client with n examples: epochs * ceil(n / batch_size), capped.
  int64_t StepsFor(uint64_t n) const;
  // ||a||_1 for `steps` steps: steps without momentum, else the momentum form above.
  double NormFor(int64_t steps) const;
};

class FedNova final : public Strategy {
 public:
  FedNova(LocalSteps local, float server_lr = 1.0f) : local_(local), server_lr_(server_lr) {}

  std::string_view name() const override { return "fednova"; }
  Status BeginRound(const ModelWeights& global) override;
  Status Accumulate(uint64_t weight, const UpdateWriter& writer) override;
  // WeightedMean's bounds, and a local run short enough for the exact sum of norms (a_i < 2^42).
  Status CheckUpdate(const UpdateStats& stats, uint64_t weight) const override;
  size_t num_accumulated() const override { return mean_.count(); }
  Result<ModelWeights> Finalize() override;
  std::string needs_each_weight() const override {
    return "FedNova scales each update by its own local steps (from its num_examples), which a "
           "sum of many updates does not show";
  }

  // sum_i p_i * a_i of the updates folded so far (0 before any).
  double tau_eff() const;

 private:
  LocalSteps local_;
  float server_lr_;
  ModelWeights global_;
  WeightedMean mean_{"fednova"};
  unsigned __int128 weighted_norms_ = 0;  // sum_i n_i * round(a_i * 2^20)
  bool begun_ = false;
};

}  // namespace tributary
