// Dropout's forward and backward (train/dropout_math.h): the CPU engine's mask and scale, so both
// engines drop the same values of a step.
#include "train/cuda/kernels.h"
#include "train/cuda/launch.cuh"
#include "train/dropout_math.h"

namespace tributary::cuda {
namespace {

__global__ void DropoutKernel(const float* __restrict__ src, float* __restrict__ dst, int64_t size,
                              int64_t count, uint64_t key, uint32_t threshold, float scale) {
  for (int64_t i = GlobalIndex(); i < count; i += GridStride()) {
    const auto sample = static_cast<uint64_t>(i / size);
    const auto element = static_cast<uint64_t>(i % size);
    dst[i] = DropoutBits(key, sample, element) >= threshold ? src[i] * scale : 0.0f;
  }
}

}  // namespace

cudaError_t LaunchDropout(const float* src, float* dst, int64_t size, int64_t n, uint64_t key,
                          float rate, cudaStream_t stream) {
  const int64_t count = n * size;
  TRIB_LAUNCH(DropoutKernel, GridFor(count), kThreads, stream)
  (src, dst, size, count, key, DropoutThreshold(rate), DropoutScale(rate));
  return LaunchStatus();
}

}  // namespace tributary::cuda
