#include "aggregation/scaffold.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace tributary {

Status Scaffold::BeginRound(const ModelWeights& global) {
  if (!control_.empty() && control_.size() != global.size())
    return Status::InvalidArgument(
        fmt::format("scaffold: the control variate has {} values, the model {}", control_.size(),
                    global.size()));
  if (control_.empty()) control_.assign(global.size(), 0.0f);
  global_ = global;
  mean_.Reset(global.size());
  deltas_.Reset(global.size());
  begun_ = true;
  return Status::Ok();
}

Status Scaffold::CheckRoundSize(int64_t n) const {
  TRIB_RETURN_IF_ERROR(Strategy::CheckRoundSize(n));
  if (clients_ > 0 && static_cast<uint64_t>(n) > clients_)
    return Status::InvalidArgument(fmt::format(
        "scaffold(clients={}) counts every client of the run, and a round takes {} updates: set "
        "clients to the number of clients (at least the round's), or 0 for every round's updates",
        clients_, n));
  return Status::Ok();
}

Status Scaffold::Accumulate(uint64_t weight, const UpdateWriter& writer) {
  if (!begun_) return Status::FailedPrecondition("scaffold: Accumulate before BeginRound");
  return mean_.Add(weight, writer);
}

Status Scaffold::AccumulateControl(std::span<const float> delta) {
  if (!begun_) return Status::FailedPrecondition("scaffold: AccumulateControl before BeginRound");
  if (delta.size() != control_.size())
    return Status::InvalidArgument(fmt::format(
        "scaffold: a control delta of {} values for a model of {}", delta.size(), control_.size()));
  if (deltas_.count() >= mean_.count())
    return Status::FailedPrecondition(
        "scaffold: a control delta without an update accumulated before it");
  return deltas_.Add(1, [&](UpdateSink& sink, float scale) { sink.AddDense(0, delta, scale); });
}

Result<ModelWeights> Scaffold::Finalize() {
  if (!begun_ || mean_.count() == 0)
    return Status::FailedPrecondition("scaffold: no updates to aggregate");
  if (deltas_.count() != mean_.count())
    return Status::FailedPrecondition(
        fmt::format("scaffold: {} updates but {} control deltas", mean_.count(), deltas_.count()));
  ModelWeights next = global_;
  float* w = next.data().data();
  for (size_t i = 0; i < next.size(); ++i)
    w[i] = static_cast<float>(w[i] + mean_.MeanAt(i) * server_lr_);
  // c += (1/N) sum dc = (count/N) * mean dc, with share <= 1 (CheckRoundSize). Each delta is below
  // 2^30 in magnitude (CheckControl), so c grows by less than that a round and stays finite.
  const double count = static_cast<double>(deltas_.count());
  const double share = clients_ == 0 ? 1.0 : std::min(1.0, count / static_cast<double>(clients_));
  for (size_t i = 0; i < control_.size(); ++i)
    control_[i] = static_cast<float>(control_[i] + deltas_.MeanAt(i) * share);
  begun_ = false;
  return next;
}

Result<ModelWeights> Scaffold::SaveState() const {
  if (control_.empty()) return ModelWeights();
  TRIB_ASSIGN_OR_RETURN(ModelWeights state,
                        ModelWeights::Create({{"c", {static_cast<int64_t>(control_.size())}}}));
  std::copy(control_.begin(), control_.end(), state.tensor(0).begin());
  return state;
}

Status Scaffold::LoadState(const ModelWeights& state, size_t model_size) {
  if (state.num_tensors() == 0) {
    control_.clear();
    return Status::Ok();
  }
  const TensorInfo* c = state.find("c");
  if (c == nullptr || state.num_tensors() != 1)
    return Status::InvalidArgument(
        "scaffold: checkpointed strategy state must hold exactly the "
        "tensor 'c' (the server control variate)");
  if (c->numel != model_size)
    return Status::InvalidArgument(
        fmt::format("scaffold: the checkpointed control variate has {} values, the model has {}",
                    c->numel, model_size));
  for (float f : state.data())
    if (!std::isfinite(f))
      return Status::InvalidArgument("scaffold: the checkpointed control variate is not finite");
  control_.assign(state.data().begin(), state.data().end());
  return Status::Ok();
}

}  // namespace tributary
