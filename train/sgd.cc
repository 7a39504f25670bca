#include "train/sgd.h"

#include <cmath>

#include "core/check.h"

namespace tributary {

Result<SgdConfig> OptimizerOf(const FitConfig& fit) {
  SgdConfig c{fit.lr, fit.momentum, fit.weight_decay, fit.proximal_mu};
  if (fit.optimizer == "adam")
    c.optimizer = OptimizerKind::kAdam;
  else if (fit.optimizer == "adamw")
    c.optimizer = OptimizerKind::kAdamW;
  else if (fit.optimizer != "sgd")
    return Status::InvalidArgument("fit.optimizer '" + fit.optimizer +
                                   "' is not one of sgd, adam, adamw");
  c.beta1 = fit.beta1;
  c.beta2 = fit.beta2;
  c.eps = fit.eps;
  return c;
}

AdamFactors AdamFactorsAt(const SgdConfig& cfg, int64_t step) {
  const double t = static_cast<double>(step);
  return {static_cast<float>(cfg.lr / (1.0 - std::pow(double{cfg.beta1}, t))),
          static_cast<float>(std::sqrt(1.0 - std::pow(double{cfg.beta2}, t)))};
}

void AdamUpdate(float* w, const float* grad, float* m, float* v, const float* anchor, size_t n,
                const SgdConfig& cfg, int64_t step, const float* correction) {
  TRIB_CHECK(step >= 1, "Adam's step count starts at 1");
  TRIB_CHECK(cfg.proximal_mu == 0.0f || anchor != nullptr, "proximal term needs an anchor");
  const bool decoupled = cfg.optimizer == OptimizerKind::kAdamW;
  const float lr = cfg.lr, mu = cfg.proximal_mu, b1 = cfg.beta1, b2 = cfg.beta2, eps = cfg.eps;
  const float l2 = decoupled ? 0.0f : cfg.weight_decay;
  const float decay = decoupled ? 1.0f - lr * cfg.weight_decay : 1.0f;
  const auto [step_size, bc2_sqrt] = AdamFactorsAt(cfg, step);
  for (size_t i = 0; i < n; ++i) {
    float wi = w[i] * decay;
    const float g = grad[i] + l2 * wi + (mu != 0.0f ? mu * (wi - anchor[i]) : 0.0f);
    m[i] = b1 * m[i] + (1.0f - b1) * g;
    v[i] = b2 * v[i] + (1.0f - b2) * g * g;
    const float denom = std::sqrt(v[i]) / bc2_sqrt + eps;
    w[i] = wi - step_size * (m[i] / denom);
  }
  if (correction != nullptr)
    for (size_t i = 0; i < n; ++i) w[i] -= lr * correction[i];
}

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
