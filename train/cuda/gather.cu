// Batch gather: copies the samples named by an index list out of the device-resident dataset.
#include "train/cuda/kernels.h"
#include "train/cuda/launch.cuh"

namespace tributary::cuda {
namespace {

__global__ void GatherBatchKernel(const float* __restrict__ images,
                                  const uint8_t* __restrict__ labels,
                                  const uint32_t* __restrict__ idx, int64_t n, int64_t sample_size,
                                  float* __restrict__ x, uint8_t* __restrict__ y) {
  const int64_t total = n * sample_size;
  for (int64_t i = GlobalIndex(); i < total; i += GridStride()) {
    const int64_t s = i / sample_size, j = i - s * sample_size;
    const int64_t src = static_cast<int64_t>(idx[s]);
    x[i] = images[src * sample_size + j];
    if (j == 0) y[s] = labels[src];
  }
}

}  // namespace

cudaError_t LaunchGatherBatch(const float* images, const uint8_t* labels, const uint32_t* idx,
                              int64_t n, int64_t sample_size, float* x, uint8_t* y,
                              cudaStream_t stream) {
  TRIB_LAUNCH(GatherBatchKernel, GridFor(n * sample_size), kThreads, stream)
  (images, labels, idx, n, sample_size, x, y);
  return LaunchStatus();
}

}  // namespace tributary::cuda
