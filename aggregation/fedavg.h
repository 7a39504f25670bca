// FedAvg (McMahan et al. 2017): the next global model is the global model plus the weighted mean
// of the client deltas, weighted by each client's num_examples. Streaming: one fixed-point
// accumulator (8 bytes per parameter, see FixedPointSink) whatever the number of clients per round,
// and the result does not depend on the order in which updates arrive.
#pragma once

#include <vector>

#include "aggregation/strategy.h"

namespace tributary {

class FedAvg final : public Strategy {
 public:
  // server_lr scales the averaged delta (1.0 is plain FedAvg).
  explicit FedAvg(float server_lr = 1.0f) : server_lr_(server_lr) {}

  std::string_view name() const override { return "fedavg"; }
  Status BeginRound(const ModelWeights& global) override;
  Status Accumulate(double weight, const UpdateWriter& writer) override;
  size_t num_accumulated() const override { return count_; }
  Result<ModelWeights> Finalize() override;

  double total_weight() const { return total_weight_; }

 private:
  float server_lr_;
  ModelWeights global_;
  std::vector<int64_t> sum_;  // fixed point, 2^-32 units
  double total_weight_ = 0.0;
  size_t count_ = 0;
  bool begun_ = false;
};

}  // namespace tributary
