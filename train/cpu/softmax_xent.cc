#include "train/cpu/softmax_xent.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace tributary::cpu {

StepStats SoftmaxCrossEntropy(const float* logits, const uint8_t* labels, int64_t n, int64_t k,
                              float* grad, int64_t total) {
  StepStats st;
  st.count = n;
  const float inv_n = 1.0f / static_cast<float>(total);
  for (int64_t i = 0; i < n; ++i) {
    const float* z = logits + i * k;
    const int64_t y = labels[i];
    TRIB_DCHECK(y < k, "label out of range");
    int64_t arg = 0;
    float mx = z[0];
    for (int64_t j = 1; j < k; ++j)
      if (z[j] > mx) mx = z[j], arg = j;
    double sum = 0.0;
    for (int64_t j = 0; j < k; ++j) sum += std::exp(static_cast<double>(z[j] - mx));
    st.loss_sum += std::log(sum) - static_cast<double>(z[y] - mx);
    st.correct += (arg == y);
    if (grad) {
      float* g = grad + i * k;
      const double inv_sum = 1.0 / sum;
      for (int64_t j = 0; j < k; ++j)
        g[j] = static_cast<float>(std::exp(static_cast<double>(z[j] - mx)) * inv_sum) * inv_n;
      g[y] -= inv_n;
    }
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

}  // namespace tributary::cpu
