// FakeTrainer: a deterministic Trainer for client tests.
//
// Layout: "fc.weight" [2, 3] and "fc.bias" [3] (9 floats).
// fit:      new[i] = global[i] + lr * (i + 1); num_examples = 100 * epochs;
//           metrics train_loss = 1 / epochs, train_accuracy = 0.5.
// evaluate: loss = sum of the weights, accuracy = 0.75, num_examples = 40.
// predict:  the linear layer, 2 inputs per sample to 3 outputs: y[k] = sum_i x[i] * W[i][k] + b[k]
//           (W = fc.weight, b = fc.bias); InvalidArgument when inputs is not count * 2 values.
// Counts its calls; thread-safe counters (the client calls it from its worker thread, predict from
// the app's). `overlapping_calls` counts calls that began while another was still running (the
// Trainer contract says there are none). `during_fit`, when set, runs inside fit, which first
// stores the call's FitConfig::stop in `fit_stop` (read it from during_fit: same thread). For
// SCAFFOLD it reports `steps` and says it applies the correction when `applies` is set, and keeps
// the last fit's FitConfig::correction in `last_correction`.
#pragma once

#include <atomic>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "tributary/trainer.h"

namespace tributary::testing {

class FakeTrainer final : public Trainer {
 public:
  static ModelWeights Layout() {
    return *ModelWeights::Create({{"fc.weight", {2, 3}}, {"fc.bias", {3}}});
  }

  Result<ModelWeights> get_parameters() override { return Layout(); }

  Result<FitResult> fit(const ModelWeights& global, const FitConfig& config) override {
    InCall in(this);
    ++fit_calls;
    last_seed = config.seed;
    fit_stop = config.stop;
    if (during_fit) during_fit();
    last_correction.assign(config.correction.begin(), config.correction.end());
    FitResult r;
    r.weights = global;
    std::span<float> w = r.weights.data();
    for (size_t i = 0; i < w.size(); ++i) w[i] += config.lr * static_cast<float>(i + 1);
    r.num_examples = 100 * config.epochs;
    r.steps = steps;
    r.metrics = {{"train_loss", 1.0 / config.epochs}, {"train_accuracy", 0.5}};
    return r;
  }

  bool applies_correction() const override { return applies; }

  Result<EvalResult> evaluate(const ModelWeights& weights, const EvalConfig&) override {
    InCall in(this);
    ++eval_calls;
    EvalResult r;
    r.loss = std::accumulate(weights.data().begin(), weights.data().end(), 0.0);
    r.accuracy = 0.75;
    r.num_examples = 40;
    return r;
  }

  Result<std::vector<float>> predict(const ModelWeights& weights, std::span<const float> inputs,
                                     int64_t count) override {
    InCall in(this);
    ++predict_calls;
    if (count < 1 || inputs.size() != static_cast<size_t>(count) * 2)
      return Status::InvalidArgument("FakeTrainer::predict: " + std::to_string(inputs.size()) +
                                     " inputs for " + std::to_string(count) +
                                     " samples of 2 values");
    std::span<const float> w = weights.tensor(0), b = weights.tensor(1);
    std::vector<float> out(static_cast<size_t>(count) * 3);
    for (int64_t n = 0; n < count; ++n)
      for (size_t k = 0; k < 3; ++k)
        out[n * 3 + k] = inputs[n * 2] * w[k] + inputs[n * 2 + 1] * w[3 + k] + b[k];
    return out;
  }

  std::atomic<int> fit_calls{0};
  std::atomic<int> eval_calls{0};
  std::atomic<int> predict_calls{0};
  std::atomic<int> overlapping_calls{0};
  std::atomic<uint64_t> last_seed{0};
  std::function<void()> during_fit;
  std::stop_token fit_stop;
  // SCAFFOLD: whether it claims to apply the correction, the steps it reports, and the
  // correction its last fit was given (it does not apply it: the weights move as above).
  bool applies = false;
  int64_t steps = 0;
  std::vector<float> last_correction;

 private:
  struct InCall {
    explicit InCall(FakeTrainer* t) : t(t) {
      if (t->in_call_.exchange(true)) ++t->overlapping_calls;
    }
    ~InCall() { t->in_call_ = false; }
    FakeTrainer* t;
  };
  std::atomic<bool> in_call_{false};
};

}  // namespace tributary::testing
