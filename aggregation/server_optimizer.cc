#include "aggregation/server_optimizer.h"

#include <algorithm>
#include <cmath>

namespace tributary {
namespace {

std::string_view KindName(ServerOptimizer::Kind k) {
  switch (k) {
    case ServerOptimizer::Kind::kAvgM:
      return "fedavgm";
    case ServerOptimizer::Kind::kAdagrad:
      return "fedadagrad";
    case ServerOptimizer::Kind::kAdam:
      return "fedadam";
    case ServerOptimizer::Kind::kYogi:
      return "fedyogi";
  }
  return "server_optimizer";
}

}  // namespace

ServerOptimizer::ServerOptimizer(Kind kind, const Params& params)
    : kind_(kind), p_(params), mean_(KindName(kind)) {}

std::string_view ServerOptimizer::name() const { return KindName(kind_); }

Status ServerOptimizer::BeginRound(const ModelWeights& global) {
  if (!m_.empty() && m_.size() != global.size())
    return Status::InvalidArgument(std::string(name()) + ": saved optimizer state has " +
                                   std::to_string(m_.size()) + " values, the model has " +
                                   std::to_string(global.size()));
  global_ = global;
  mean_.Reset(global.size());
  begun_ = true;
  return Status::Ok();
}

Status ServerOptimizer::Accumulate(uint64_t weight, const UpdateWriter& writer) {
  if (!begun_)
    return Status::FailedPrecondition(std::string(name()) + ": Accumulate before BeginRound");
  return mean_.Add(weight, writer);
}

Status ServerOptimizer::AccumulateDense(uint64_t weight, std::span<const uint8_t> bytes,
                                        float scale) {
  if (!begun_)
    return Status::FailedPrecondition(std::string(name()) + ": Accumulate before BeginRound");
  return mean_.AddDense(weight, bytes, scale);
}

Status ServerOptimizer::MergePartialSum(const PartialSum& partial) {
  if (!begun_)
    return Status::FailedPrecondition(std::string(name()) + ": MergePartialSum before BeginRound");
  return mean_.Merge(partial);
}

Result<ModelWeights> ServerOptimizer::Finalize() {
  if (!begun_ || mean_.count() == 0)
    return Status::FailedPrecondition(std::string(name()) + ": no updates to aggregate");
  const size_t n = global_.size();
  if (m_.empty()) {
    m_.assign(n, 0.0f);
    if (adaptive()) v_.assign(n, static_cast<float>(p_.tau * p_.tau));
  }
  ModelWeights next = global_;
  float* x = next.data().data();
  const double lr = p_.server_lr, b1 = p_.beta1, b2 = p_.beta2, tau = p_.tau;
  switch (kind_) {
    case Kind::kAvgM:
      for (size_t i = 0; i < n; ++i) {
        const double m = p_.momentum * m_[i] + mean_.MeanAt(i);
        m_[i] = static_cast<float>(m);
        x[i] = static_cast<float>(x[i] + lr * m);
      }
      break;
    case Kind::kAdagrad:
    case Kind::kAdam:
    case Kind::kYogi:
      for (size_t i = 0; i < n; ++i) {
        const double d = mean_.MeanAt(i), d2 = d * d;
        const double m = b1 * m_[i] + (1.0 - b1) * d;
        double v = v_[i];
        if (kind_ == Kind::kAdagrad) {
          v += d2;
        } else if (kind_ == Kind::kAdam) {
          v = b2 * v + (1.0 - b2) * d2;
        } else {
          const double diff = v - d2;
          const double sign = diff > 0.0 ? 1.0 : (diff < 0.0 ? -1.0 : 0.0);
          v -= (1.0 - b2) * d2 * sign;
        }
        m_[i] = static_cast<float>(m);
        v_[i] = static_cast<float>(v);
        x[i] = static_cast<float>(x[i] + lr * m / (std::sqrt(v) + tau));
      }
      break;
  }
  begun_ = false;
  return next;
}

Result<ModelWeights> ServerOptimizer::SaveState() const {
  if (m_.empty()) return ModelWeights();
  const auto n = static_cast<int64_t>(m_.size());
  ModelWeights::LayoutSpec layout = {{"m", {n}}};
  if (adaptive()) layout.push_back({"v", {n}});
  TRIB_ASSIGN_OR_RETURN(ModelWeights state, ModelWeights::Create(layout));
  std::copy(m_.begin(), m_.end(), state.tensor(0).begin());
  if (adaptive()) std::copy(v_.begin(), v_.end(), state.tensor(1).begin());
  return state;
}

Status ServerOptimizer::LoadState(const ModelWeights& state, size_t model_size) {
  if (state.num_tensors() == 0) {
    m_.clear();
    v_.clear();
    return Status::Ok();
  }
  const std::string who(name());
  const TensorInfo* m = state.find("m");
  const TensorInfo* v = state.find("v");
  const size_t want = adaptive() ? 2 : 1;
  if (m == nullptr || (adaptive() && v == nullptr) || state.num_tensors() != want)
    return Status::InvalidArgument(who + ": checkpointed strategy state must hold exactly the " +
                                   (adaptive() ? "tensors 'm' and 'v'" : "tensor 'm'"));
  if (v != nullptr && v->numel != m->numel)
    return Status::InvalidArgument(who + ": checkpointed 'm' and 'v' differ in size");
  if (m->numel != model_size)
    return Status::InvalidArgument(who + ": checkpointed state has " + std::to_string(m->numel) +
                                   " values per tensor, the model has " +
                                   std::to_string(model_size));
  auto all = state.data();
  for (float f : all)
    if (!std::isfinite(f)) return Status::InvalidArgument(who + ": checkpointed state not finite");
  if (adaptive())
    for (size_t i = 0; i < v->numel; ++i)
      if (all[v->offset + i] < 0.0f)
        return Status::InvalidArgument(who + ": checkpointed 'v' has a negative value");
  m_.assign(all.begin() + m->offset, all.begin() + m->offset + m->numel);
  if (adaptive()) v_.assign(all.begin() + v->offset, all.begin() + v->offset + v->numel);
  return Status::Ok();
}

}  // namespace tributary
