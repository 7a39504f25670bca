// Softmax cross-entropy over logits [n, k] with integer labels.
#pragma once

#include <cstdint>

#include "train/engine.h"

namespace tributary::cpu {

// Returns the summed loss and the count of correct argmax predictions. When grad is not null,
// writes d(mean loss)/d(logits) = (softmax - onehot) / total into it, where total is the size of
// the whole batch these n samples are a shard of (total = n for a whole batch). A label >= k is a
// caller bug.
StepStats SoftmaxCrossEntropy(const float* logits, const uint8_t* labels, int64_t n, int64_t k,
                              float* grad, int64_t total);
// Writes the softmax of each row of logits [n, k] to probs [n, k] (computed in double, like the
// loss above).
void Softmax(const float* logits, int64_t n, int64_t k, float* probs);

}  // namespace tributary::cpu
