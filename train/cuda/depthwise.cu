// Depthwise Conv2D forward and backward (kernels.h), with the CPU's arithmetic
// (train/depthwise_math.h): one thread per output value, per input-gradient value, and per
// parameter gradient, each looping in the CPU's order (a parameter's samples in sample order), so
// the results are the CPU engine's bits and need no atomics.
#include "train/cuda/kernels.h"
#include "train/cuda/launch.cuh"
#include "train/depthwise_math.h"

namespace tributary::cuda {
namespace {

__global__ void DepthwiseForwardKernel(DepthwiseGeometry g, const float* __restrict__ in, int64_t n,
                                       const float* __restrict__ weight,
                                       const float* __restrict__ bias, float* __restrict__ out) {
  const int64_t size = g.out_size(), ow = g.ow();
  for (int64_t i = GlobalIndex(); i < n * size; i += GridStride()) {
    const int64_t s = i / size, r = i % size;
    const int64_t ch = r % g.c, pos = r / g.c;
    out[i] = DepthwiseOutput(g, in + s * g.in_size(), weight, bias, pos / ow, pos % ow, ch);
  }
}

__global__ void DepthwiseInputGradKernel(DepthwiseGeometry g, const float* __restrict__ grad_out,
                                         int64_t n, const float* __restrict__ weight,
                                         float* __restrict__ grad_in) {
  const int64_t size = g.in_size();
  for (int64_t i = GlobalIndex(); i < n * size; i += GridStride()) {
    const int64_t s = i / size, r = i % size;
    const int64_t ch = r % g.c, pos = r / g.c;
    grad_in[i] =
        DepthwiseInputGrad(g, grad_out + s * g.out_size(), weight, pos / g.w, pos % g.w, ch);
  }
}

// Thread j < c * k * k: weight gradient (ch = j / (k*k), tap j % (k*k)); thread c * k * k + ch: the
// bias gradient of ch.
__global__ void DepthwiseParamGradKernel(DepthwiseGeometry g, const float* __restrict__ in,
                                         const float* __restrict__ grad_out, int64_t n,
                                         float* __restrict__ dw, float* __restrict__ db) {
  const int64_t taps = g.k * g.k, weights = g.c * taps;
  for (int64_t j = GlobalIndex(); j < weights + g.c; j += GridStride()) {
    float acc = 0.0f;
    for (int64_t s = 0; s < n; ++s) {
      const float* dy = grad_out + s * g.out_size();
      const float v = j < weights
                          ? DepthwiseWeightGrad(g, in + s * g.in_size(), dy, (j % taps) / g.k,
                                                (j % taps) % g.k, j / taps)
                          : DepthwiseBiasGrad(g, dy, j - weights);
      acc = s == 0 ? v : acc + v;
    }
    if (j < weights)
      dw[j] = acc;
    else
      db[j - weights] = acc;
  }
}

}  // namespace

cudaError_t LaunchDepthwiseForward(const DepthwiseGeometry& g, const float* in, int64_t n,
                                   const float* weight, const float* bias, float* out,
                                   cudaStream_t stream) {
  TRIB_LAUNCH(DepthwiseForwardKernel, GridFor(n * g.out_size()), kThreads, stream)
  (g, in, n, weight, bias, out);
  return LaunchStatus();
}

cudaError_t LaunchDepthwiseBackward(const DepthwiseGeometry& g, const float* in,
                                    const float* grad_out, int64_t n, const float* weight,
                                    float* dw, float* db, float* grad_in, cudaStream_t stream) {
  TRIB_LAUNCH(DepthwiseParamGradKernel, GridFor(g.c * g.k * g.k + g.c), kThreads, stream)
  (g, in, grad_out, n, dw, db);
  if (cudaError_t e = LaunchStatus(); e != cudaSuccess || grad_in == nullptr) return e;
  TRIB_LAUNCH(DepthwiseInputGradKernel, GridFor(n * g.in_size()), kThreads, stream)
  (g, grad_out, n, weight, grad_in);
  return LaunchStatus();
}

}  // namespace tributary::cuda
