// Embedding forward and backward (kernels.h), with the CPU's arithmetic (train/embedding_math.h):
// one thread per output value; for the weight gradient one thread per table column, which walks
// the positions in order and adds each to its token's row (the CPU's order, so the same bits,
// without atomics).
#include "train/cuda/kernels.h"
#include "train/cuda/launch.cuh"
#include "train/embedding_math.h"

namespace tributary::cuda {
namespace {

__global__ void EmbeddingForwardKernel(const float* __restrict__ ids, int64_t positions,
                                       int64_t vocab, int64_t dim, const float* __restrict__ weight,
                                       float* __restrict__ out) {
  for (int64_t i = GlobalIndex(); i < positions * dim; i += GridStride()) {
    const int64_t row = TokenRow(ids[i / dim], vocab);
    out[i] = row < 0 ? 0.0f : weight[row * dim + i % dim];
  }
}

__global__ void EmbeddingWeightGradKernel(const float* __restrict__ ids,
                                          const float* __restrict__ grad_out, int64_t positions,
                                          int64_t vocab, int64_t dim, float* __restrict__ dw) {
  for (int64_t d = GlobalIndex(); d < dim; d += GridStride()) {
    for (int64_t r = 0; r < vocab; ++r) dw[r * dim + d] = 0.0f;
    for (int64_t p = 0; p < positions; ++p) {
      const int64_t row = TokenRow(ids[p], vocab);
      if (row >= 0) dw[row * dim + d] += grad_out[p * dim + d];
    }
  }
}

__global__ void EmbeddingInputGradKernel(float* __restrict__ out, int64_t count) {
  for (int64_t i = GlobalIndex(); i < count; i += GridStride()) out[i] = 0.0f;
}

__global__ void SequenceLengthsKernel(const float* __restrict__ ids, int64_t n, int64_t positions,
                                      float pad, int32_t* __restrict__ lengths) {
  for (int64_t s = GlobalIndex(); s < n; s += GridStride())
    lengths[s] = SequenceLength(ids + s * positions, positions, pad);
}

}  // namespace

cudaError_t LaunchSequenceLengths(const float* ids, int64_t n, int64_t positions, float pad,
                                  int32_t* lengths, cudaStream_t stream) {
  TRIB_LAUNCH(SequenceLengthsKernel, GridFor(n), kThreads, stream)(ids, n, positions, pad, lengths);
  return LaunchStatus();
}

cudaError_t LaunchEmbeddingForward(const float* ids, int64_t positions, int64_t vocab, int64_t dim,
                                   const float* weight, float* out, cudaStream_t stream) {
  TRIB_LAUNCH(EmbeddingForwardKernel, GridFor(positions * dim), kThreads, stream)
  (ids, positions, vocab, dim, weight, out);
  return LaunchStatus();
}

cudaError_t LaunchEmbeddingBackward(const float* ids, const float* grad_out, int64_t positions,
                                    int64_t vocab, int64_t dim, float* dw, float* grad_in,
                                    cudaStream_t stream) {
  TRIB_LAUNCH(EmbeddingWeightGradKernel, GridFor(dim), kThreads, stream)
  (ids, grad_out, positions, vocab, dim, dw);
  if (cudaError_t e = LaunchStatus(); e != cudaSuccess || grad_in == nullptr) return e;
  TRIB_LAUNCH(EmbeddingInputGradKernel, GridFor(positions), kThreads, stream)(grad_in, positions);
  return LaunchStatus();
}

}  // namespace tributary::cuda
