#include "train/cpu/embedding.h"

#include <algorithm>

#include "train/embedding_math.h"

namespace tributary::cpu {

void Embedding::Forward(const float* in, float* out, int64_t n) {
  for (int64_t p = 0; p < n * positions_; ++p) {
    const int64_t row = TokenRow(in[p], vocab_);
    float* y = out + p * dim_;
    if (row < 0)
      std::fill(y, y + dim_, 0.0f);
    else
      std::copy(w_ + row * dim_, w_ + (row + 1) * dim_, y);
  }
}

void Embedding::Backward(const float* in, const float*, const float* grad_out, float* grad_in,
                         int64_t n) {
  std::fill(dw_, dw_ + vocab_ * dim_, 0.0f);
  for (int64_t p = 0; p < n * positions_; ++p) {
    const int64_t row = TokenRow(in[p], vocab_);
    if (row < 0) continue;
    const float* g = grad_out + p * dim_;
    float* dw = dw_ + row * dim_;
    for (int64_t d = 0; d < dim_; ++d) dw[d] += g[d];
  }
  if (grad_in) std::fill(grad_in, grad_in + n * positions_, 0.0f);
}

}  // namespace tributary::cpu
