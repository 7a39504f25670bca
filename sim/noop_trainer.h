// NoopTrainer: a Trainer that does no training. fit() returns the global weights unchanged (a zero
// update) and evaluate() reports zeros. The simulator uses it to measure what the framework itself
// costs per client and round — selection, messages, encoding, validation, aggregation — without
// any training time.
//
// Thread-compatible (one instance per thread, like every Trainer).
#pragma once

#include "tributary/trainer.h"

namespace tributary {

class NoopTrainer final : public Trainer {
 public:
  // `layout` gives the model's tensors (its values are not used).
  NoopTrainer(const ModelWeights& layout, int64_t num_examples)
      : layout_(layout.ZerosLike()), num_examples_(num_examples) {}

  Result<ModelWeights> get_parameters() override { return layout_; }
  Result<FitResult> fit(const ModelWeights& global, const FitConfig&) override {
    FitResult r;
    r.weights = global;
    r.num_examples = num_examples_;
    return r;
  }
  Result<EvalResult> evaluate(const ModelWeights&, const EvalConfig&) override {
    EvalResult r;
    r.num_examples = num_examples_;
    return r;
  }

 private:
  ModelWeights layout_;
  int64_t num_examples_;
};

}  // namespace tributary
