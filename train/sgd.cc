#include "train/sgd.h"

#include "core/check.h"

namespace tributary {

void SgdUpdate(float* w, const float* grad, float* velocity, const float* anchor, size_t n,
               const SgdConfig& cfg, const float* correction) {
  const float lr = cfg.lr, wd = cfg.weight_decay, mu = cfg.proximal_mu, m = cfg.momentum;
  TRIB_CHECK(mu == 0.0f || anchor != nullptr, "proximal term needs an anchor");
  TRIB_CHECK(m == 0.0f || velocity != nullptr, "momentum needs a velocity buffer");
  // Separate loops per case keep each one branch-free so the compiler vectorizes it.
  if (m == 0.0f && wd == 0.0f && mu == 0.0f) {
    for (size_t i = 0; i < n; ++i) w[i] -= lr * grad[i];
  } else if (m == 0.0f) {
    for (size_t i = 0; i < n; ++i) {
      const float g = grad[i] + wd * w[i] + (mu != 0.0f ? mu * (w[i] - anchor[i]) : 0.0f);
      w[i] -= lr * g;
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      const float g = grad[i] + wd * w[i] + (mu != 0.0f ? mu * (w[i] - anchor[i]) : 0.0f);
      velocity[i] = m * velocity[i] + g;
      w[i] -= lr * velocity[i];
    }
  }
  // A separate subtraction, not folded into g: the correction stays out of the momentum.
  if (correction != nullptr)
    for (size_t i = 0; i < n; ++i) w[i] -= lr * correction[i];
}

}  // namespace tributary
