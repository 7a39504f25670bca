// Elementwise sums for the residual (add) layer: its forward, out = a + b, and the engine's
// accumulation of the gradient a residual connection carries back to its source, dst += src.
#include "train/cuda/kernels.h"
#include "train/cuda/launch.cuh"

namespace tributary::cuda {
namespace {

__global__ void AddKernel(const float* a, const float* b, float* out, int64_t count) {
  for (int64_t i = GlobalIndex(); i < count; i += GridStride()) out[i] = a[i] + b[i];
}

}  // namespace

cudaError_t LaunchAdd(const float* a, const float* b, float* out, int64_t count,
                      cudaStream_t stream) {
  TRIB_LAUNCH(AddKernel, GridFor(count), kThreads, stream)(a, b, out, count);
  return LaunchStatus();
}

}  // namespace tributary::cuda
