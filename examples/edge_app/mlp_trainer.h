// MlpTrainer: the example app's own Trainer — a small fully connected ReLU network trained with
// plain minibatch SGD, written directly in C++ loops to show that the client does not care how
// training happens.
//
// Its parameters follow the layout of Tributary's "mlp" model (784-200-200-10): tensors
// fc1.weight [200, 784], fc1.bias [200], fc2.weight ..., fc3.bias [10], weights stored [out, in].
// A coordinator running `run.model = "mlp"` therefore sends a model this trainer accepts.
#pragma once

#include <cstdint>
#include <vector>

#include "synthetic_data.h"
#include "tributary/trainer.h"

namespace edge_app {

class MlpTrainer final : public tributary::Trainer {
 public:
  // widths: input, hidden..., classes, e.g. {784, 200, 200, 10}.
  MlpTrainer(std::vector<int> widths, Examples train, Examples eval, uint64_t seed);

  tributary::Result<tributary::ModelWeights> get_parameters() override;
  tributary::Result<tributary::FitResult> fit(const tributary::ModelWeights& global,
                                              const tributary::FitConfig& config) override;
  tributary::Result<tributary::EvalResult> evaluate(const tributary::ModelWeights& weights,
                                                    const tributary::EvalConfig& config) override;

 private:
  // Forward pass over examples [begin, begin + n); fills acts_ and returns the summed loss and the
  // number of correct predictions.
  std::pair<double, int64_t> Forward(const tributary::ModelWeights& w, const Examples& data,
                                     const std::vector<int64_t>& order, int64_t begin, int64_t n);
  // Backward pass for the batch Forward last saw; applies one SGD step to `w`.
  void BackwardAndStep(tributary::ModelWeights& w, const Examples& data,
                       const std::vector<int64_t>& order, int64_t begin, int64_t n, float lr,
                       float weight_decay);

  std::vector<int> widths_;
  Examples train_, eval_;
  uint64_t seed_;
  std::vector<std::vector<float>> acts_;  // per layer: batch x width (post-ReLU; last = softmax)
};

}  // namespace edge_app
