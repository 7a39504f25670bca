// Softmax cross-entropy over logits [n, k] with integer labels.
#pragma once

#include <cstdint>

#include "train/engine.h"

namespace tributary::cpu {

// Returns the summed loss and the count of correct argmax predictions. When grad is not null,
// writes d(mean loss)/d(logits) = (softmax - onehot) / n into it. A label >= k is a caller bug.
StepStats SoftmaxCrossEntropy(const float* logits, const uint8_t* labels, int64_t n, int64_t k,
                              float* grad);

}  // namespace tributary::cpu
