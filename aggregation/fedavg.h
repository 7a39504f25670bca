// FedAvg (McMahan et al. 2017): the next global model is the global model plus the weighted mean
// of the client deltas, weighted by each client's num_examples. Streaming: one fixed-point
// accumulator (8 bytes per parameter, see WeightedMean) whatever the number of clients per round,
// and the result does not depend on the order in which updates arrive.
//
// FedProx (Li et al. 2020) aggregates exactly like FedAvg; its proximal term mu * (w - w_global)
// is added to the clients' gradients (FitConfig::proximal_mu, see train/sgd.h). MakeFedProx builds
// a FedAvg that reports that mu through client_proximal_mu() so the coordinator sends it out.
#pragma once

#include <memory>

#include "aggregation/strategy.h"
#include "aggregation/weighted_mean.h"

namespace tributary {

class FedAvg final : public Strategy {
 public:
  // server_lr scales the averaged delta (1.0 is plain FedAvg).
  explicit FedAvg(float server_lr = 1.0f) : server_lr_(server_lr) {}
  // FedAvg aggregation that asks clients for the proximal coefficient `mu` (>= 0).
  static std::unique_ptr<FedAvg> MakeFedProx(float mu, float server_lr = 1.0f);

  std::string_view name() const override { return fedprox_ ? "fedprox" : "fedavg"; }
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
  float client_proximal_mu() const override { return proximal_mu_; }

  uint64_t total_weight() const { return mean_.total_weight(); }

 private:
  float server_lr_;
  float proximal_mu_ = 0.0f;
  bool fedprox_ = false;
  ModelWeights global_;
  WeightedMean mean_{"fedavg"};
  bool begun_ = false;
};

}  // namespace tributary
