// Sigmoid, tanh and GELU forward and backward, with the CPU engine's formulas
// (train/activation_math.h).
#include "train/activation_math.h"
#include "train/cuda/kernels.h"
#include "train/cuda/launch.cuh"

namespace tributary::cuda {
namespace {

__global__ void ActivationForwardKernel(ActivationFn fn, const float* __restrict__ in,
                                        float* __restrict__ out, int64_t count) {
  for (int64_t i = GlobalIndex(); i < count; i += GridStride())
    out[i] = ActivationForward(fn, in[i]);
}

__global__ void ActivationBackwardKernel(ActivationFn fn, const float* __restrict__ in,
                                         const float* __restrict__ out,
                                         const float* __restrict__ grad_out,
                                         float* __restrict__ grad_in, int64_t count) {
  for (int64_t i = GlobalIndex(); i < count; i += GridStride())
    grad_in[i] = grad_out[i] * ActivationSlope(fn, in[i], out[i]);
}

}  // namespace

cudaError_t LaunchActivationForward(int fn, const float* in, float* out, int64_t count,
                                    cudaStream_t stream) {
  TRIB_LAUNCH(ActivationForwardKernel, GridFor(count), kThreads, stream)
  (static_cast<ActivationFn>(fn), in, out, count);
  return LaunchStatus();
}

cudaError_t LaunchActivationBackward(int fn, const float* in, const float* out,
                                     const float* grad_out, float* grad_in, int64_t count,
                                     cudaStream_t stream) {
  TRIB_LAUNCH(ActivationBackwardKernel, GridFor(count), kThreads, stream)
  (static_cast<ActivationFn>(fn), in, out, grad_out, grad_in, count);
  return LaunchStatus();
}

}  // namespace tributary::cuda
