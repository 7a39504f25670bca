// Max-pooling with window = stride = k, forward (with argmax) and backward.
#include "train/cuda/kernels.h"
#include "train/cuda/launch.cuh"

namespace tributary::cuda {
namespace {

// One thread per output element; scans its window in (ky, kx) order and keeps the first maximum,
// as the CPU reference does, so both pick the same element on ties.
__global__ void MaxPoolForwardKernel(const float* __restrict__ in, int64_t n, PoolGeometry g,
                                     float* __restrict__ out, int32_t* __restrict__ argmax) {
  const int64_t total = n * g.oh * g.ow * g.c, in_size = g.h * g.w * g.c;
  for (int64_t i = GlobalIndex(); i < total; i += GridStride()) {
    const int64_t ch = i % g.c, t0 = i / g.c;
    const int64_t ox = t0 % g.ow, t1 = t0 / g.ow;
    const int64_t oy = t1 % g.oh, s = t1 / g.oh;
    const float* img = in + s * in_size;
    int64_t best = ((oy * g.k) * g.w + ox * g.k) * g.c + ch;
    float best_v = img[best];
    for (int64_t ky = 0; ky < g.k; ++ky) {
      for (int64_t kx = 0; kx < g.k; ++kx) {
        const int64_t at = ((oy * g.k + ky) * g.w + ox * g.k + kx) * g.c + ch;
        const float v = img[at];
        if (v > best_v) {
          best_v = v;
          best = at;
        }
      }
    }
    out[i] = best_v;
    argmax[i] = static_cast<int32_t>(best);
  }
}

// One thread per input element: windows do not overlap, so each input has at most one window,
// and it receives that window's gradient when it was the window's argmax.
__global__ void MaxPoolBackwardKernel(const float* __restrict__ grad_out,
                                      const int32_t* __restrict__ argmax, int64_t n, PoolGeometry g,
                                      float* __restrict__ grad_in) {
  const int64_t in_size = g.h * g.w * g.c, total = n * in_size;
  for (int64_t i = GlobalIndex(); i < total; i += GridStride()) {
    const int64_t s = i / in_size, within = i - s * in_size;
    const int64_t ch = within % g.c, t0 = within / g.c;
    const int64_t x = t0 % g.w, y = t0 / g.w;
    const int64_t oy = y / g.k, ox = x / g.k;
    float v = 0.0f;
    if (oy < g.oh && ox < g.ow) {
      const int64_t o = ((s * g.oh + oy) * g.ow + ox) * g.c + ch;
      if (argmax[o] == within) v = grad_out[o];
    }
    grad_in[i] = v;
  }
}

}  // namespace

cudaError_t LaunchMaxPoolForward(const float* in, int64_t n, const PoolGeometry& g, float* out,
                                 int32_t* argmax, cudaStream_t stream) {
  TRIB_LAUNCH(MaxPoolForwardKernel, GridFor(n * g.oh * g.ow * g.c), kThreads, stream)
  (in, n, g, out, argmax);
  return LaunchStatus();
}

cudaError_t LaunchMaxPoolBackward(const float* grad_out, const int32_t* argmax, int64_t n,
                                  const PoolGeometry& g, float* grad_in, cudaStream_t stream) {
  TRIB_LAUNCH(MaxPoolBackwardKernel, GridFor(n * g.h * g.w * g.c), kThreads, stream)
  (grad_out, argmax, n, g, grad_in);
  return LaunchStatus();
}

}  // namespace tributary::cuda
