// The optimizers' updates over flat parameter buffers (shared by every backend's host-side
// reference), and the SgdConfig a FitConfig asks for.
#pragma once

#include <cstddef>
#include <cstdint>

#include "train/engine.h"
#include "tributary/trainer.h"

namespace tributary {

// The step settings of `fit` (its lr, momentum, weight decay, proximal term and optimizer);
// InvalidArgument naming fit.optimizer when it is not sgd, adam or adamw.
Result<SgdConfig> OptimizerOf(const FitConfig& fit);

// In place: g = grad + wd * w + mu * (w - anchor); v = momentum * v + g (or v unused when
// momentum is 0); w -= lr * (momentum ? v : g); then, when `correction` is not null (SCAFFOLD),
// w -= lr * correction. `anchor` may be null when proximal_mu is 0; `velocity` may be null when
// momentum is 0.
void SgdUpdate(float* w, const float* grad, float* velocity, const float* anchor, size_t n,
               const SgdConfig& cfg, const float* correction = nullptr);

// Adam and AdamW (cfg.optimizer; engine.h has the formulas) at step `step` >= 1: m and v are the
// first and second moments (n each, zero before the first step). As PyTorch computes it: the bias
// corrections in double, then float arithmetic per element. `anchor` may be null when
// proximal_mu is 0; `correction` (SCAFFOLD's) may be null.
// The step's bias corrections, as AdamUpdate computes them (in double, rounded once):
// step_size = lr / (1 - beta1^t), bc2_sqrt = sqrt(1 - beta2^t).
struct AdamFactors {
  float step_size;
  float bc2_sqrt;
};
AdamFactors AdamFactorsAt(const SgdConfig& cfg, int64_t step);
void AdamUpdate(float* w, const float* grad, float* m, float* v, const float* anchor, size_t n,
                const SgdConfig& cfg, int64_t step, const float* correction = nullptr);

}  // namespace tributary
