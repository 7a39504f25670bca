// GlobalModelHolder: the latest global model a client received, kept for prediction between rounds
// (tributary::Client::predict).
//
// The runtime hands it every global model it decodes for a fit or evaluate task (Update, on the
// worker): it keeps the model in memory and saves it in the client's state dir
// (ClientState::SaveGlobalModel), so a client created later on the same dir starts with it
// (Restore). A model that cannot be saved is kept in memory only, with a warning: prediction is a
// convenience and never fails a task.
//
// Threading: the Trainer is used from one thread at a time. The worker holds a TrainerScope around
// each Trainer call it makes (fit, evaluate); Predict takes the same lock, so it waits for a fit in
// progress to return and never runs alongside one. Predict and info() may be called from any
// thread. Predict from inside a Trainer call (which would wait for itself) is refused with
// FailedPrecondition. Update and Restore run on the worker, or before it starts.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "client/client_state.h"
#include "tributary/client.h"
#include "tributary/trainer.h"

namespace tributary {

class GlobalModelHolder {
 public:
  explicit GlobalModelHolder(std::shared_ptr<Trainer> trainer);

  // Holds the trainer lock for the lifetime of the scope (the worker, around fit / evaluate).
  class TrainerScope {
   public:
    explicit TrainerScope(GlobalModelHolder& holder);
    ~TrainerScope();
    TrainerScope(const TrainerScope&) = delete;
    TrainerScope& operator=(const TrainerScope&) = delete;

   private:
    GlobalModelHolder& holder_;
    std::lock_guard<std::mutex> lock_;
  };

  // Takes the model saved in `state` when it matches `layout` (the trainer's). OK when it did or
  // when there is none (or `state` is null); otherwise the reason it was not used (the caller logs
  // it: a damaged or foreign file is not fatal, the next task brings a model).
  Status Restore(const ClientState* state, const ModelWeights& layout);

  // The global model of a task just received: kept, and saved in `state` (may be null) unless it
  // equals the one already held.
  void Update(const ModelWeights& global, uint64_t round, uint64_t model_version,
              ClientState* state);

  // trainer.predict(the latest global model, inputs, count). FailedPrecondition when no model was
  // received (nor restored) yet, or when called from inside a Trainer call; InvalidArgument when
  // count < 1; otherwise what the trainer returns.
  Result<std::vector<float>> Predict(std::span<const float> inputs, int64_t count);

  // The latest model's round and version; nullopt before there is one.
  std::optional<GlobalModelInfo> info() const;

 private:
  void Set(std::shared_ptr<const ModelWeights> model, GlobalModelInfo info);

  const std::shared_ptr<Trainer> trainer_;
  // Held around every Trainer call.
  std::mutex trainer_mu_;
  // The thread holding trainer_mu_ (default id when none), to refuse a Predict that would
  // deadlock.
  std::atomic<std::thread::id> trainer_thread_{};

  mutable std::mutex mu_;
  std::shared_ptr<const ModelWeights> model_;  // GUARDED_BY(mu_)
  GlobalModelInfo info_;                       // GUARDED_BY(mu_)
};

}  // namespace tributary
