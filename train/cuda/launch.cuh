// Shared launch helpers for the .cu files (kernel code only; host .cc files never include this).
//
// Kernels are launched with TRIB_LAUNCH(kernel, grid, block, stream)(args...) and launchers
// return LaunchStatus(). Under nvcc that is kernel<<<grid, block, 0, stream>>>(args...) and
// cudaGetLastError(). Compiled by a plain C++ compiler with TRIB_CUDA_HOST_EMULATION defined, the
// same kernels run on the CPU (train/cuda/host_emulation.h), which is how
// tests/train/cuda/kernel_emulation_test.cc checks their indexing on machines without a GPU.
#pragma once

#if defined(__CUDACC__)
#include <cuda_runtime.h>
#define TRIB_LAUNCH(kernel, grid, block, stream) kernel<<<(grid), (block), 0, (stream)>>>
#elif defined(TRIB_CUDA_HOST_EMULATION)
#include "train/cuda/host_emulation.h"
#else
#error "launch.cuh is for .cu files (nvcc) or the host-emulation test (TRIB_CUDA_HOST_EMULATION)"
#endif

#include <cstdint>

namespace tributary::cuda {

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over `count` elements: enough to fill the GPU, never more than
// needed.
inline unsigned GridFor(int64_t count) {
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65536 ? 65536 : blocks));
}

// Index of this thread in a 1-D grid, and the grid's stride, as 64-bit values.
__device__ inline int64_t GlobalIndex() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t GridStride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

#if defined(__CUDACC__)
inline cudaError_t LaunchStatus() { return cudaGetLastError(); }
#endif

}  // namespace tributary::cuda
