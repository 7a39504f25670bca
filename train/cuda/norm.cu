// GroupNorm and LayerNorm forward and backward (kernels.h), with the CPU's arithmetic
// (train/norm_math.h): one thread per (sample, set) for the statistics and the input gradient, one
// per channel for the parameter gradients, each looping in the CPU's order.
#include "train/cuda/kernels.h"
#include "train/cuda/launch.cuh"
#include "train/norm_math.h"

namespace tributary::cuda {
namespace {

__global__ void NormForwardKernel(NormGeometry g, const float* __restrict__ in, int64_t n,
                                  const float* __restrict__ gamma, const float* __restrict__ beta,
                                  float* __restrict__ out, float* __restrict__ mean,
                                  float* __restrict__ rstd) {
  const int64_t sets = g.sets(), size = g.positions * g.c;
  for (int64_t i = GlobalIndex(); i < n * sets; i += GridStride()) {
    const int64_t s = i / sets, set = i % sets;
    NormForwardSet(g, in + s * size, out + s * size, gamma, beta, set, &mean[i], &rstd[i]);
  }
}

__global__ void NormInputGradKernel(NormGeometry g, const float* __restrict__ in,
                                    const float* __restrict__ grad_out, int64_t n,
                                    const float* __restrict__ gamma, const float* __restrict__ mean,
                                    const float* __restrict__ rstd, float* __restrict__ grad_in) {
  const int64_t sets = g.sets(), size = g.positions * g.c;
  for (int64_t i = GlobalIndex(); i < n * sets; i += GridStride()) {
    const int64_t s = i / sets, set = i % sets;
    NormBackwardSet(g, in + s * size, grad_out + s * size, grad_in + s * size, gamma, set, mean[i],
                    rstd[i]);
  }
}

__global__ void NormParamGradKernel(NormGeometry g, const float* __restrict__ in,
                                    const float* __restrict__ grad_out, int64_t n,
                                    const float* __restrict__ mean, const float* __restrict__ rstd,
                                    float* __restrict__ dgamma, float* __restrict__ dbeta) {
  for (int64_t ch = GlobalIndex(); ch < g.c; ch += GridStride())
    NormParamGrad(g, in, grad_out, n, ch, mean, rstd, &dgamma[ch], &dbeta[ch]);
}

}  // namespace

cudaError_t LaunchNormForward(const NormGeometry& g, const float* in, int64_t n, const float* gamma,
                              const float* beta, float* out, float* mean, float* rstd,
                              cudaStream_t stream) {
  TRIB_LAUNCH(NormForwardKernel, GridFor(n * g.sets()), kThreads, stream)
  (g, in, n, gamma, beta, out, mean, rstd);
  return LaunchStatus();
}

cudaError_t LaunchNormBackward(const NormGeometry& g, const float* in, const float* grad_out,
                               int64_t n, const float* gamma, const float* mean, const float* rstd,
                               float* dgamma, float* dbeta, float* grad_in, cudaStream_t stream) {
  TRIB_LAUNCH(NormParamGradKernel, GridFor(g.c), kThreads, stream)
  (g, in, grad_out, n, mean, rstd, dgamma, dbeta);
  if (cudaError_t e = LaunchStatus(); e != cudaSuccess || grad_in == nullptr) return e;
  TRIB_LAUNCH(NormInputGradKernel, GridFor(n * g.sets()), kThreads, stream)
  (g, in, grad_out, n, gamma, mean, rstd, grad_in);
  return LaunchStatus();
}

}  // namespace tributary::cuda
