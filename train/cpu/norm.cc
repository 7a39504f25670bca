#include "train/cpu/norm.h"

namespace tributary::cpu {

void Norm::Bind(float* params, float* grads) {
  gamma_ = params;
  beta_ = params + g_.c;
  dgamma_ = grads;
  dbeta_ = grads + g_.c;
}

void Norm::Forward(const float* in, float* out, int64_t n) {
  const int64_t size = g_.positions * g_.c, sets = g_.sets();
  for (int64_t s = 0; s < n; ++s)
    for (int64_t set = 0; set < sets; ++set)
      NormForwardSet(g_, in + s * size, out + s * size, gamma_, beta_, set,
                     &mean_[static_cast<size_t>(s * sets + set)],
                     &rstd_[static_cast<size_t>(s * sets + set)]);
}

void Norm::Backward(const float* in, const float*, const float* grad_out, float* grad_in,
                    int64_t n) {
  const int64_t size = g_.positions * g_.c, sets = g_.sets();
  for (int64_t ch = 0; ch < g_.c; ++ch)
    NormParamGrad(g_, in, grad_out, n, ch, mean_.data(), rstd_.data(), &dgamma_[ch], &dbeta_[ch]);
  if (!grad_in) return;
  for (int64_t s = 0; s < n; ++s)
    for (int64_t set = 0; set < sets; ++set) {
      const auto st = static_cast<size_t>(s * sets + set);
      NormBackwardSet(g_, in + s * size, grad_out + s * size, grad_in + s * size, gamma_, set,
                      mean_[st], rstd_[st]);
    }
}

}  // namespace tributary::cpu
