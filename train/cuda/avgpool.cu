// Average pooling forward and backward (kernels.h), with the CPU AvgPool2D's order of sums.
#include "train/cuda/kernels.h"
#include "train/cuda/launch.cuh"

namespace tributary::cuda {
namespace {

// One thread per output element (sample, oy, ox, channel).
__global__ void AvgPoolForwardKernel(const float* __restrict__ in, int64_t n, AvgPoolGeometry g,
                                     float* __restrict__ out) {
  const int64_t total = n * g.oh * g.ow * g.c;
  const float scale = 1.0f / static_cast<float>(g.kh * g.kw);
  for (int64_t i = GlobalIndex(); i < total; i += GridStride()) {
    const int64_t ch = i % g.c, ox = (i / g.c) % g.ow, oy = (i / (g.c * g.ow)) % g.oh,
                  s = i / (g.c * g.ow * g.oh);
    const float* img = in + s * g.h * g.w * g.c;
    float sum = 0.0f;
    for (int64_t ky = 0; ky < g.kh; ++ky)
      for (int64_t kx = 0; kx < g.kw; ++kx)
        sum += img[((oy * g.kh + ky) * g.w + ox * g.kw + kx) * g.c + ch];
    out[i] = sum * scale;
  }
}

// One thread per input element: its window's gradient share, or 0 past the last whole window.
__global__ void AvgPoolBackwardKernel(const float* __restrict__ grad_out, int64_t n,
                                      AvgPoolGeometry g, float* __restrict__ grad_in) {
  const int64_t total = n * g.h * g.w * g.c;
  const float scale = 1.0f / static_cast<float>(g.kh * g.kw);
  for (int64_t i = GlobalIndex(); i < total; i += GridStride()) {
    const int64_t ch = i % g.c, x = (i / g.c) % g.w, y = (i / (g.c * g.w)) % g.h,
                  s = i / (g.c * g.w * g.h);
    const int64_t oy = y / g.kh, ox = x / g.kw;
    grad_in[i] = (oy < g.oh && ox < g.ow)
                     ? grad_out[((s * g.oh + oy) * g.ow + ox) * g.c + ch] * scale
                     : 0.0f;
  }
}

}  // namespace

cudaError_t LaunchAvgPoolForward(const float* in, int64_t n, const AvgPoolGeometry& g, float* out,
                                 cudaStream_t stream) {
  TRIB_LAUNCH(AvgPoolForwardKernel, GridFor(n * g.oh * g.ow * g.c), kThreads, stream)
  (in, n, g, out);
  return LaunchStatus();
}

cudaError_t LaunchAvgPoolBackward(const float* grad_out, int64_t n, const AvgPoolGeometry& g,
                                  float* grad_in, cudaStream_t stream) {
  TRIB_LAUNCH(AvgPoolBackwardKernel, GridFor(n * g.h * g.w * g.c), kThreads, stream)
  (grad_out, n, g, grad_in);
  return LaunchStatus();
}

}  // namespace tributary::cuda
