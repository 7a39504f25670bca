// The SGD update over flat parameter buffers (shared by every backend's host-side reference).
#pragma once

#include <cstddef>

#include "train/engine.h"

namespace tributary {

// In place: g = grad + wd * w + mu * (w - anchor); v = momentum * v + g (or v unused when
// momentum is 0); w -= lr * (momentum ? v : g); then, when `correction` is not null (SCAFFOLD),
// w -= lr * correction. `anchor` may be null when proximal_mu is 0; `velocity` may be null when
// momentum is 0.
void SgdUpdate(float* w, const float* grad, float* velocity, const float* anchor, size_t n,
               const SgdConfig& cfg, const float* correction = nullptr);

}  // namespace tributary
