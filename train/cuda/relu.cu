// ReLU forward and backward (the backward reads the output, as the CPU reference does).
#include "train/cuda/kernels.h"
#include "train/cuda/launch.cuh"

namespace tributary::cuda {
namespace {

__device__ inline float Relu(float v) { return v > 0.0f ? v : 0.0f; }

__global__ void ReluForwardKernel(const float* __restrict__ in, float* __restrict__ out,
                                  int64_t count) {
  for (int64_t i = GlobalIndex(); i < count; i += GridStride()) out[i] = Relu(in[i]);
}

__global__ void ReluBackwardKernel(const float* __restrict__ out,
                                   const float* __restrict__ grad_out, float* __restrict__ grad_in,
                                   int64_t count) {
  for (int64_t i = GlobalIndex(); i < count; i += GridStride())
    grad_in[i] = out[i] > 0.0f ? grad_out[i] : 0.0f;
}

}  // namespace

cudaError_t LaunchReluForward(const float* in, float* out, int64_t count, cudaStream_t stream) {
  TRIB_LAUNCH(ReluForwardKernel, GridFor(count), kThreads, stream)(in, out, count);
  return LaunchStatus();
}

cudaError_t LaunchReluBackward(const float* out, const float* grad_out, float* grad_in,
                               int64_t count, cudaStream_t stream) {
  TRIB_LAUNCH(ReluBackwardKernel, GridFor(count), kThreads, stream)(out, grad_out, grad_in, count);
  return LaunchStatus();
}

}  // namespace tributary::cuda
