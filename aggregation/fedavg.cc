#include "aggregation/fedavg.h"

namespace tributary {

std::unique_ptr<FedAvg> FedAvg::MakeFedProx(float mu, float server_lr) {
  auto s = std::make_unique<FedAvg>(server_lr);
  s->proximal_mu_ = mu;
  s->fedprox_ = true;
  return s;
}

Status FedAvg::BeginRound(const ModelWeights& global) {
  global_ = global;
  mean_.Reset(global.size());
  begun_ = true;
  return Status::Ok();
}

Status FedAvg::Accumulate(uint64_t weight, const UpdateWriter& writer) {
  if (!begun_) return Status::FailedPrecondition("fedavg: Accumulate before BeginRound");
  return mean_.Add(weight, writer);
}

Status FedAvg::AccumulateDense(uint64_t weight, std::span<const uint8_t> bytes, float scale) {
  if (!begun_) return Status::FailedPrecondition("fedavg: Accumulate before BeginRound");
  return mean_.AddDense(weight, bytes, scale);
}

Status FedAvg::MergePartialSum(const PartialSum& partial) {
  if (!begun_) return Status::FailedPrecondition("fedavg: MergePartialSum before BeginRound");
  return mean_.Merge(partial);
}

Result<ModelWeights> FedAvg::Finalize() {
  if (!begun_ || mean_.count() == 0)
    return Status::FailedPrecondition("fedavg: no updates to aggregate");
  ModelWeights next = global_;
  float* w = next.data().data();
  for (size_t i = 0; i < next.size(); ++i)
    w[i] = static_cast<float>(w[i] + mean_.MeanAt(i) * server_lr_);
  begun_ = false;
  return next;
}

}  // namespace tributary
