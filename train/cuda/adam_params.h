// The Adam kernel's parameters for one step (host side): AdamUpdate's (train/sgd.h) settings and
// bias corrections, as the CUDA engine and the kernels' tests pass them to LaunchAdamUpdate.
#pragma once

#include "train/cuda/kernels.h"
#include "train/sgd.h"

namespace tributary::cuda {

inline AdamParams AdamParamsAt(const SgdConfig& cfg, int64_t step) {
  const bool decoupled = cfg.optimizer == OptimizerKind::kAdamW;
  const AdamFactors f = AdamFactorsAt(cfg, step);
  return AdamParams{cfg.lr,
                    cfg.proximal_mu,
                    cfg.beta1,
                    cfg.beta2,
                    cfg.eps,
                    decoupled ? 0.0f : cfg.weight_decay,
                    decoupled ? 1.0f - cfg.lr * cfg.weight_decay : 1.0f,
                    f.step_size,
                    f.bc2_sqrt};
}

}  // namespace tributary::cuda
