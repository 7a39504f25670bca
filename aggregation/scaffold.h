// SCAFFOLD (Karimireddy, Kale, Mohri, Reddi, Stich, Suresh, "SCAFFOLD: Stochastic Controlled
// Averaging for Federated Learning", ICML 2020): control variates correct the client drift of
// non-IID local training. The server keeps a control variate c, one value per parameter, and sends
// it with every task; client i keeps its own c_i, trains with the gradient corrected by c - c_i,
// and answers with its model delta and its control delta dc_i = c_i+ - c_i, where (option II)
//   c_i+ = c_i - c + (x - y_i) / (K_i * lr)
// (client/task_executor.h). The server then takes
//   x <- x + server_lr * sum_i p_i * dy_i          (p_i = n_i / sum n: FedAvg's weights, as in
//                                                   NIID-Bench's SCAFFOLD)
//   c <- c + (1 / N) * sum_i dc_i                  (N: every client, `clients`; 0 means the
//                                                   round's updates, i.e. full participation)
//
// Both sums are exact fixed-point sums (WeightedMean: the model deltas with the integer weights
// n_i, the control deltas with weight 1), so the result does not depend on the order updates
// arrive in. c is the rule's state: SaveState exports it as the tensor "c" for checkpoints.
// The two sums carry different weights, so SCAFFOLD takes neither secure aggregation's nor
// differential privacy's single sum; and a control variate that a stale update would fold into
// is not defined for asynchronous steps: all three are refused at start-up (engine_parts.h).
//
// Not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "aggregation/strategy.h"
#include "aggregation/weighted_mean.h"

namespace tributary {

class Scaffold final : public Strategy {
 public:
  // server_lr > 0 (global step size, 1 in the paper's experiments); clients >= 0.
  Scaffold(float server_lr, uint64_t clients) : server_lr_(server_lr), clients_(clients) {}

  std::string_view name() const override { return "scaffold"; }
  Status BeginRound(const ModelWeights& global) override;
  Status Accumulate(uint64_t weight, const UpdateWriter& writer) override;
  Status CheckUpdate(const UpdateStats& stats, uint64_t weight) const override {
    return mean_.CheckUpdate(stats, weight);
  }
  size_t num_accumulated() const override { return mean_.count(); }
  // With clients = N set, a round of more than N updates would step c by more than the mean:
  // InvalidArgument at start-up.
  Status CheckRoundSize(int64_t n) const override;
  // FailedPrecondition when nothing was accumulated or an update came without its control delta;
  // c is then unchanged.
  Result<ModelWeights> Finalize() override;

  bool uses_control_variates() const override { return true; }
  std::span<const float> server_control() const override { return control_; }
  Status CheckControl(const UpdateStats& stats) const override {
    return deltas_.CheckUpdate(stats, 1);
  }
  Status AccumulateControl(std::span<const float> delta) override;

  Result<ModelWeights> SaveState() const override;
  Status LoadState(const ModelWeights& state, size_t model_size) override;

 private:
  float server_lr_;
  uint64_t clients_;
  ModelWeights global_;
  std::vector<float> control_;  // c; empty until the first BeginRound or LoadState
  WeightedMean mean_{"scaffold"};
  WeightedMean deltas_{"scaffold's control deltas"};
  bool begun_ = false;
};

}  // namespace tributary
