#include "aggregation/fednova.h"

#include <cmath>

#include <fmt/format.h>

namespace tributary {
namespace {

constexpr double kNormScale = 1048576.0;      // a_i in units of 2^-20 for the exact sum
constexpr double kMaxNorm = 4398046511104.0;  // 2^42: a_i * 2^20 < 2^62 fits llround's int64

}  // namespace

int64_t LocalSteps::StepsFor(uint64_t n) const {
  const uint64_t batch = static_cast<uint64_t>(std::max<int64_t>(1, batch_size));
  const int64_t per_epoch = static_cast<int64_t>((std::max<uint64_t>(n, 1) + batch - 1) / batch);
  const int64_t steps = std::max<int64_t>(1, epochs) * per_epoch;
  return max_steps > 0 ? std::min(steps, max_steps) : steps;
}

double LocalSteps::NormFor(int64_t steps) const {
  const double tau = static_cast<double>(steps);
  if (momentum == 0.0) return tau;
  const double rho = momentum;
  return (tau - rho * (1.0 - std::pow(rho, tau)) / (1.0 - rho)) / (1.0 - rho);
}

Status FedNova::BeginRound(const ModelWeights& global) {
  global_ = global;
  mean_.Reset(global.size());
  weighted_norms_ = 0;
  begun_ = true;
  return Status::Ok();
}

Status FedNova::Accumulate(uint64_t weight, const UpdateWriter& writer) {
  if (!begun_) return Status::FailedPrecondition("fednova: Accumulate before BeginRound");
  const double norm = local_.NormFor(local_.StepsFor(weight));
  const float inverse = static_cast<float>(1.0 / norm);
  TRIB_RETURN_IF_ERROR(
      mean_.Add(weight, [&](UpdateSink& sink, float outer) { writer(sink, outer * inverse); }));
  weighted_norms_ += static_cast<unsigned __int128>(weight) *
                     static_cast<uint64_t>(std::llround(norm * kNormScale));
  return Status::Ok();
}

Status FedNova::CheckUpdate(const UpdateStats& stats, uint64_t weight) const {
  const int64_t steps = local_.StepsFor(weight);
  if (!(local_.NormFor(steps) < kMaxNorm))
    return Status::InvalidArgument(
        fmt::format("fednova: an update of weight {} stands for {} local steps, whose norm is past "
                    "what the exact sum of norms holds (2^42)",
                    weight, steps));
  return mean_.CheckUpdate(stats, weight);
}

double FedNova::tau_eff() const {
  if (mean_.total_weight() == 0) return 0.0;
  return static_cast<double>(weighted_norms_) / kNormScale /
         static_cast<double>(mean_.total_weight());
}

Result<ModelWeights> FedNova::Finalize() {
  if (!begun_ || mean_.count() == 0)
    return Status::FailedPrecondition("fednova: no updates to aggregate");
  const double step = tau_eff() * server_lr_;
  ModelWeights next = global_;
  float* w = next.data().data();
  for (size_t i = 0; i < next.size(); ++i) w[i] = static_cast<float>(w[i] + mean_.MeanAt(i) * step);
  begun_ = false;
  return next;
}

}  // namespace tributary
