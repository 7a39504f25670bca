// im2col and its adjoint col2im for stride-1 convolutions on NHWC input (see kernels.h for the
// column layout, which matches train/cpu/conv2d.cc so the OHWI weight is the [oc, taps] matrix).
#include "train/cuda/kernels.h"
#include "train/cuda/launch.cuh"

namespace tributary::cuda {
namespace {

// The input value that column entry (row, tap) copies, or 0 in the padding.
__device__ inline float Im2ColValue(const float* __restrict__ in, const ConvGeometry& g,
                                    int64_t row, int64_t tap) {
  const int64_t ox = row % g.ow, t = row / g.ow;
  const int64_t oy = t % g.oh, s = t / g.oh;
  const int64_t ic = tap % g.c, kk = tap / g.c;
  const int64_t kx = kk % g.k, ky = kk / g.k;
  const int64_t iy = oy + ky - g.p, ix = ox + kx - g.p;
  if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) return 0.0f;
  return in[((s * g.h + iy) * g.w + ix) * g.c + ic];
}

__global__ void Im2ColKernel(const float* __restrict__ in, int64_t n, ConvGeometry g,
                             float* __restrict__ cols) {
  const int64_t taps = g.taps(), total = n * g.oh * g.ow * taps;
  for (int64_t i = GlobalIndex(); i < total; i += GridStride())
    cols[i] = Im2ColValue(in, g, i / taps, i % taps);
}

// One thread per input element: sums, in a fixed (ky, kx) order, the column entries that im2col
// copied from it. A gather rather than a scatter, so no atomics and a deterministic result.
__global__ void Col2ImKernel(const float* __restrict__ cols, int64_t n, ConvGeometry g,
                             float* __restrict__ grad_in) {
  const int64_t taps = g.taps(), total = n * g.h * g.w * g.c;
  for (int64_t i = GlobalIndex(); i < total; i += GridStride()) {
    const int64_t ic = i % g.c, t0 = i / g.c;
    const int64_t ix = t0 % g.w, t1 = t0 / g.w;
    const int64_t iy = t1 % g.h, s = t1 / g.h;
    float acc = 0.0f;
    for (int64_t ky = 0; ky < g.k; ++ky) {
      const int64_t oy = iy + g.p - ky;
      if (oy < 0 || oy >= g.oh) continue;
      for (int64_t kx = 0; kx < g.k; ++kx) {
        const int64_t ox = ix + g.p - kx;
        if (ox < 0 || ox >= g.ow) continue;
        acc += cols[((s * g.oh + oy) * g.ow + ox) * taps + (ky * g.k + kx) * g.c + ic];
      }
    }
    grad_in[i] = acc;
  }
}

}  // namespace

cudaError_t LaunchIm2Col(const float* in, int64_t n, const ConvGeometry& g, float* cols,
                         cudaStream_t stream) {
  TRIB_LAUNCH(Im2ColKernel, GridFor(n * g.oh * g.ow * g.taps()), kThreads, stream)(in, n, g, cols);
  return LaunchStatus();
}

cudaError_t LaunchCol2Im(const float* cols, int64_t n, const ConvGeometry& g, float* grad_in,
                         cudaStream_t stream) {
  TRIB_LAUNCH(Col2ImKernel, GridFor(n * g.h * g.w * g.c), kThreads, stream)(cols, n, g, grad_in);
  return LaunchStatus();
}

}  // namespace tributary::cuda
