// The training losses over outputs [n, k] with integer labels (train/loss_math.h: softmax
// cross-entropy, mean squared error and binary cross-entropy against one-hot targets).
#pragma once

#include <cstdint>

#include "train/engine.h"
#include "train/loss_math.h"

namespace tributary::cpu {

// Returns the summed loss and the count of correct argmax predictions. When grad is not null,
// writes d(mean loss)/d(outputs) into it, the mean being over `total` samples: the size of the
// whole batch these n samples are a shard of (total = n for a whole batch). A label >= k is a
// caller bug.
StepStats ComputeLoss(LossKind kind, const float* logits, const uint8_t* labels, int64_t n,
                      int64_t k, float* grad, int64_t total);
// ComputeLoss with softmax cross-entropy.
inline StepStats SoftmaxCrossEntropy(const float* logits, const uint8_t* labels, int64_t n,
                                     int64_t k, float* grad, int64_t total) {
  return ComputeLoss(LossKind::kSoftmaxCrossEntropy, logits, labels, n, k, grad, total);
}
// Writes the softmax of each row of logits [n, k] to probs [n, k] (computed in double, like the
// loss above).
void Softmax(const float* logits, int64_t n, int64_t k, float* probs);
// What a model trained with `kind` predicts: the softmax's class probabilities (cross-entropy),
// each output's sigmoid (binary cross-entropy), or the outputs themselves (mean squared error).
void Predictions(LossKind kind, const float* logits, int64_t n, int64_t k, float* out);

}  // namespace tributary::cpu
