// The SGD update (momentum, weight decay, FedProx proximal term, SCAFFOLD correction) of
// train/sgd.h, on the device.
#include "train/cuda/kernels.h"
#include "train/cuda/launch.cuh"

namespace tributary::cuda {
namespace {

// g = grad + wd * w + mu * (w - anchor); v = m * v + g; w -= lr * (m != 0 ? v : g).
__device__ inline float RegularizedGrad(float w, float grad, const float* anchor, int64_t i,
                                        const SgdParams& p) {
  return grad + p.weight_decay * w +
         (p.proximal_mu != 0.0f ? p.proximal_mu * (w - anchor[i]) : 0.0f);
}

__global__ void SgdKernel(float* __restrict__ w, const float* __restrict__ grad,
                          float* __restrict__ velocity, const float* __restrict__ anchor,
                          const float* __restrict__ correction, int64_t n, SgdParams p) {
  for (int64_t i = GlobalIndex(); i < n; i += GridStride()) {
    const float wi = w[i];
    const float g = RegularizedGrad(wi, grad[i], anchor, i, p);
    float next;
    if (p.momentum != 0.0f) {
      const float v = p.momentum * velocity[i] + g;
      velocity[i] = v;
      next = wi - p.lr * v;
    } else {
      next = wi - p.lr * g;
    }
    // Two roundings, as the host's reference: the step, then the correction outside the momentum.
    if (correction != nullptr) next -= p.lr * correction[i];
    w[i] = next;
  }
}

}  // namespace

cudaError_t LaunchSgdUpdate(float* w, const float* grad, float* velocity, const float* anchor,
                            const float* correction, int64_t n, const SgdParams& p,
                            cudaStream_t stream) {
  TRIB_LAUNCH(SgdKernel, GridFor(n), kThreads, stream)
  (w, grad, velocity, anchor, correction, n, p);
  return LaunchStatus();
}

}  // namespace tributary::cuda
