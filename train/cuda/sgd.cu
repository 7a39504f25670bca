// The SGD update (momentum, weight decay, FedProx proximal term, SCAFFOLD correction) and Adam's
// and AdamW's of train/sgd.h, on the device.
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

// Adam / AdamW, as train/sgd.h's AdamUpdate computes each element.
__global__ void AdamKernel(float* __restrict__ w, const float* __restrict__ grad,
                           float* __restrict__ m, float* __restrict__ v,
                           const float* __restrict__ anchor, const float* __restrict__ correction,
                           int64_t n, AdamParams p) {
  for (int64_t i = GlobalIndex(); i < n; i += GridStride()) {
    const float wi = w[i] * p.decay;
    const float g =
        grad[i] + p.l2 * wi + (p.proximal_mu != 0.0f ? p.proximal_mu * (wi - anchor[i]) : 0.0f);
    const float mi = p.beta1 * m[i] + (1.0f - p.beta1) * g;
    const float vi = p.beta2 * v[i] + (1.0f - p.beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    float next = wi - p.step_size * (mi / (sqrtf(vi) / p.bc2_sqrt + p.eps));
    if (correction != nullptr) next -= p.lr * correction[i];
    w[i] = next;
  }
}

}  // namespace

cudaError_t LaunchAdamUpdate(float* w, const float* grad, float* m, float* v, const float* anchor,
                             const float* correction, int64_t n, const AdamParams& p,
                             cudaStream_t stream) {
  TRIB_LAUNCH(AdamKernel, GridFor(n), kThreads, stream)
  (w, grad, m, v, anchor, correction, n, p);
  return LaunchStatus();
}

cudaError_t LaunchSgdUpdate(float* w, const float* grad, float* velocity, const float* anchor,
                            const float* correction, int64_t n, const SgdParams& p,
                            cudaStream_t stream) {
  TRIB_LAUNCH(SgdKernel, GridFor(n), kThreads, stream)
  (w, grad, velocity, anchor, correction, n, p);
  return LaunchStatus();
}

}  // namespace tributary::cuda
