#include "aggregation/fedavg.h"

#include <algorithm>
#include <cmath>

namespace tributary {

Status FedAvg::BeginRound(const ModelWeights& global) {
  global_ = global;
  sum_.assign(global.size(), 0);
  total_weight_ = 0.0;
  count_ = 0;
  begun_ = true;
  return Status::Ok();
}

Status FedAvg::Accumulate(double weight, const UpdateWriter& writer) {
  if (!begun_) return Status::FailedPrecondition("fedavg: Accumulate before BeginRound");
  if (!(weight > 0.0) || !std::isfinite(weight))
    return Status::InvalidArgument("fedavg: update weight must be a positive number");
  FixedPointSink sink(sum_);
  writer(sink, static_cast<float>(weight));
  total_weight_ += weight;
  ++count_;
  return Status::Ok();
}

Result<ModelWeights> FedAvg::Finalize() {
  if (!begun_ || count_ == 0) return Status::FailedPrecondition("fedavg: no updates to aggregate");
  ModelWeights next = global_;
  const double scale = server_lr_ / (total_weight_ * FixedPointSink::kOne);
  float* w = next.data().data();
  const int64_t* s = sum_.data();
  for (size_t i = 0; i < next.size(); ++i)
    w[i] = static_cast<float>(w[i] + static_cast<double>(s[i]) * scale);
  begun_ = false;
  return next;
}

}  // namespace tributary
