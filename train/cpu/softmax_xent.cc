#include "train/cpu/softmax_xent.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace tributary::cpu {

StepStats ComputeLoss(LossKind kind, const float* logits, const uint8_t* labels, int64_t n,
                      int64_t k, float* grad, int64_t total) {
  StepStats st;
  st.count = n;
  const float inv_n = 1.0f / static_cast<float>(total);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t y = labels[i];
    TRIB_DCHECK(y < k, "label out of range");
    int64_t arg = 0;
    st.loss_sum +=
        SampleLoss(kind, logits + i * k, k, y, inv_n, grad ? grad + i * k : nullptr, &arg);
    st.correct += (arg == y);
  }
  return st;
}

void Softmax(const float* logits, int64_t n, int64_t k, float* probs) {
  for (int64_t i = 0; i < n; ++i) {
    const float* z = logits + i * k;
    float mx = z[0];
    for (int64_t j = 1; j < k; ++j) mx = std::max(mx, z[j]);
    double sum = 0.0;
    for (int64_t j = 0; j < k; ++j) sum += std::exp(static_cast<double>(z[j] - mx));
    for (int64_t j = 0; j < k; ++j)
      probs[i * k + j] = static_cast<float>(std::exp(static_cast<double>(z[j] - mx)) / sum);
  }
}

void Predictions(LossKind kind, const float* logits, int64_t n, int64_t k, float* out) {
  if (kind == LossKind::kSoftmaxCrossEntropy) return Softmax(logits, n, k, out);
  for (int64_t i = 0; i < n * k; ++i) {
    const double v = logits[i];
    out[i] = kind == LossKind::kMeanSquaredError ? logits[i]
                                                 : static_cast<float>(1.0 / (1.0 + std::exp(-v)));
  }
}

}  // namespace tributary::cpu
