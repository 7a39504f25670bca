#include "client/global_model_holder.h"

#include "core/log.h"

namespace tributary {

GlobalModelHolder::GlobalModelHolder(std::shared_ptr<Trainer> trainer)
    : trainer_(std::move(trainer)) {}

GlobalModelHolder::TrainerScope::TrainerScope(GlobalModelHolder& holder)
    : holder_(holder), lock_(holder.trainer_mu_) {
  holder_.trainer_thread_ = std::this_thread::get_id();
}

GlobalModelHolder::TrainerScope::~TrainerScope() { holder_.trainer_thread_ = std::thread::id(); }

Status GlobalModelHolder::Restore(const ClientState* state, const ModelWeights& layout) {
  if (!state) return Status::Ok();
  Result<SavedGlobalModel> saved = state->LoadGlobalModel(layout);
  if (!saved.ok())
    return saved.status().code() == StatusCode::kNotFound ? Status::Ok() : saved.status();
  Set(std::make_shared<const ModelWeights>(std::move(saved->weights)),
      GlobalModelInfo{saved->round, saved->model_version});
  return Status::Ok();
}

void GlobalModelHolder::Update(const ModelWeights& global, uint64_t round, uint64_t model_version,
                               ClientState* state) {
  {
    // Only the worker writes model_, so reading it here races with nothing but readers. An
    // evaluation usually carries the model the previous fit already brought: no need to write
    // the file again.
    std::lock_guard<std::mutex> lock(mu_);
    if (model_ && info_.model_version == model_version && *model_ == global) return;
  }
  if (state) {
    if (Status s = state->SaveGlobalModel(global, round, model_version); !s.ok())
      Log().warn("round {}: the global model (version {}) is kept in memory only: {}", round,
                 model_version, s.ToString());
  }
  Set(std::make_shared<const ModelWeights>(global), GlobalModelInfo{round, model_version});
}

Result<std::vector<float>> GlobalModelHolder::Predict(std::span<const float> inputs,
                                                      int64_t count) {
  if (count < 1)
    return Status::InvalidArgument("predict: count must be >= 1, got " + std::to_string(count));
  if (trainer_thread_.load() == std::this_thread::get_id())
    return Status::FailedPrecondition(
        "predict: called from inside a Trainer call (fit, evaluate or predict), which would wait "
        "for itself; call it from another thread");
  TrainerScope scope(*this);
  std::shared_ptr<const ModelWeights> model;
  {
    std::lock_guard<std::mutex> lock(mu_);
    model = model_;
  }
  if (!model)
    return Status::FailedPrecondition(
        "predict: no global model yet: the client has not received one from the coordinator, "
        "and its state dir holds none");
  return trainer_->predict(*model, inputs, count);
}

std::optional<GlobalModelInfo> GlobalModelHolder::info() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!model_) return std::nullopt;
  return info_;
}

void GlobalModelHolder::Set(std::shared_ptr<const ModelWeights> model, GlobalModelInfo info) {
  std::lock_guard<std::mutex> lock(mu_);
  model_ = std::move(model);
  info_ = info;
}

}  // namespace tributary
