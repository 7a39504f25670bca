// Host emulation of the CUDA execution model, for tests only: lets the backend's .cu files compile
// with a plain C++ compiler and run their kernels on the CPU, so their index arithmetic, reductions
// and launch geometry are tested on machines without a GPU (tests/train/cuda/
// kernel_emulation_test.cc includes the .cu files with TRIB_CUDA_HOST_EMULATION defined).
//
// A launch runs one std::thread per CUDA thread of a block; every thread walks the blocks of the
// grid in order, with a barrier after each block, so __syncthreads() is a std::barrier wait and
// __shared__ (a function-local static) is shared by the block's threads. One launch at a time;
// not for production (slow, and no memory model beyond what the barrier gives).
//
// Must be included before any CUDA header, so that its __global__/__device__/__shared__ win over
// cuda's host_defines.h (which would turn them into attributes a host compiler warns about).
#pragma once

#define __global__
#define __device__
#define __host__
#define __shared__ static

#include <cuda_runtime_api.h>

#include <barrier>
#include <cmath>
#include <thread>
#include <vector>

namespace tributary::cuda::emulation {

inline thread_local dim3 block_idx, thread_idx;
inline dim3 grid_dim, block_dim;
inline std::barrier<>* block_barrier = nullptr;

template <typename Body>
void RunGrid(dim3 grid, dim3 block, const Body& body) {
  grid_dim = grid;
  block_dim = block;
  const unsigned threads = block.x * block.y * block.z;
  std::barrier<> barrier(threads);
  block_barrier = &barrier;
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      thread_idx = dim3(t % block.x, (t / block.x) % block.y, t / (block.x * block.y));
      for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
          for (unsigned bx = 0; bx < grid.x; ++bx) {
            block_idx = dim3(bx, by, bz);
            body();
            barrier.arrive_and_wait();  // the block is done before any thread starts the next
          }
    });
  }
  for (auto& w : workers) w.join();
  block_barrier = nullptr;
}

// TRIB_LAUNCH(kernel, grid, block, stream)(args...) runs kernel(args...) on the emulated grid.
template <typename Kernel>
auto Launch(Kernel kernel, dim3 grid, dim3 block) {
  return [kernel, grid, block](auto... args) { RunGrid(grid, block, [&] { kernel(args...); }); };
}

}  // namespace tributary::cuda::emulation

#define blockIdx ::tributary::cuda::emulation::block_idx
#define threadIdx ::tributary::cuda::emulation::thread_idx
#define blockDim ::tributary::cuda::emulation::block_dim
#define gridDim ::tributary::cuda::emulation::grid_dim
#define __syncthreads() ::tributary::cuda::emulation::block_barrier->arrive_and_wait()
#define TRIB_LAUNCH(kernel, grid, block, stream) \
  ((void)(stream), ::tributary::cuda::emulation::Launch(kernel, dim3(grid), dim3(block)))

namespace tributary::cuda {
inline cudaError_t LaunchStatus() { return cudaSuccess; }
}  // namespace tributary::cuda
