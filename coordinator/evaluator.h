// Evaluator: server-side evaluation of the global model, pluggable into RunDriver.
//
// ModelEvaluator evaluates a built-in model on a test set in a fixed number of slices, run in
// parallel on a ThreadPool when one is given. The slices are fixed (not one per thread) and their
// results are combined in slice order, so the numbers do not depend on the thread count: the
// coordinator and the simulator report the same accuracy for the same model.
//
// Evaluate() is called from one thread at a time.
#pragma once

#include <memory>
#include <vector>

#include "core/thread_pool.h"
#include "train/data/dataset.h"
#include "train/model_spec.h"
#include "tributary/trainer.h"

namespace tributary {

class NativeTrainer;

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  virtual Result<EvalResult> Evaluate(const ModelWeights& model) = 0;
};

class ModelEvaluator final : public Evaluator {
 public:
  // `pool` (may be null: the slices run on the calling thread) must outlive the evaluator.
  static Result<std::unique_ptr<ModelEvaluator>> Create(const ModelSpec& spec,
                                                        std::shared_ptr<const Dataset> test,
                                                        int batch_size, ThreadPool* pool);
  ~ModelEvaluator() override;
  Result<EvalResult> Evaluate(const ModelWeights& model) override;

  // The parts of Evaluate, for an evaluation spread over processes (the simulator's ranks): the
  // number of slices, some of them evaluated (one result per index of `which`, in its order; an
  // index out of range gets OutOfRange), and every slice's result combined in slice order, as
  // Evaluate does.
  size_t num_slices() const { return slices_.size(); }
  std::vector<Result<EvalResult>> EvaluateSlices(const ModelWeights& model,
                                                 const std::vector<size_t>& which);
  static Result<EvalResult> Combine(const std::vector<Result<EvalResult>>& slices);

 private:
  ModelEvaluator() = default;
  std::vector<std::unique_ptr<NativeTrainer>> slices_;
  int batch_size_ = 256;
  ThreadPool* pool_ = nullptr;
};

}  // namespace tributary
