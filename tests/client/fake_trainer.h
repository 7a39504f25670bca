// FakeTrainer: a deterministic Trainer for client tests.
//
// Layout: "fc.weight" [2, 3] and "fc.bias" [3] (9 floats).
// fit:      new[i] = global[i] + lr * (i + 1); num_examples = 100 * epochs;
//           metrics train_loss = 1 / epochs, train_accuracy = 0.5.
// evaluate: loss = sum of the weights, accuracy = 0.75, num_examples = 40.
// Counts its calls; thread-safe counters (the client calls it from its worker thread).
#pragma once

#include <atomic>
#include <numeric>

#include "tributary/trainer.h"

namespace tributary::testing {

class FakeTrainer final : public Trainer {
 public:
  static ModelWeights Layout() {
    return *ModelWeights::Create({{"fc.weight", {2, 3}}, {"fc.bias", {3}}});
  }

  Result<ModelWeights> get_parameters() override { return Layout(); }

  Result<FitResult> fit(const ModelWeights& global, const FitConfig& config) override {
    ++fit_calls;
    last_seed = config.seed;
    FitResult r;
    r.weights = global;
    std::span<float> w = r.weights.data();
    for (size_t i = 0; i < w.size(); ++i) w[i] += config.lr * static_cast<float>(i + 1);
    r.num_examples = 100 * config.epochs;
    r.metrics = {{"train_loss", 1.0 / config.epochs}, {"train_accuracy", 0.5}};
    return r;
  }

  Result<EvalResult> evaluate(const ModelWeights& weights, const EvalConfig&) override {
    ++eval_calls;
    EvalResult r;
    r.loss = std::accumulate(weights.data().begin(), weights.data().end(), 0.0);
    r.accuracy = 0.75;
    r.num_examples = 40;
    return r;
  }

  std::atomic<int> fit_calls{0};
  std::atomic<int> eval_calls{0};
  std::atomic<uint64_t> last_seed{0};
};

}  // namespace tributary::testing
