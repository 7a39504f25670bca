// A depthwise convolution's arithmetic (each channel convolved with its own k x k kernel: the
// depthwise half of a depthwise-separable convolution, Howard et al., "MobileNets", 2017; PyTorch's
// nn.Conv2d(c, c, k, padding=p, groups=c)), one definition for the CPU engine
// (train/cpu/depthwise_conv2d.cc) and the CUDA kernels (train/cuda/depthwise.cu), so the two
// backends give the same bits for the same order of work.
//
// Stride 1, zero padding p on every side, NHWC activations; the weight is [c, k, k] (PyTorch's
// [c, 1, k, k] with the singleton dropped; the tensor is [c, k, k, 1], OHWI with one input channel)
// and the bias [c]. Every sum runs over the valid taps in (ky, kx) order, or over the output
// positions in (oy, ox) order; a batch's parameter gradients are each sample's sum, added in
// sample order.
#pragma once

#include <cstdint>

#if defined(__CUDACC__) || defined(TRIB_CUDA_HOST_EMULATION)
#define TRIB_DW_HD __host__ __device__
#else
#define TRIB_DW_HD
#endif

namespace tributary {

struct DepthwiseGeometry {
  int64_t h = 1, w = 1, c = 1;  // input (and output channels)
  int64_t k = 1, p = 0;         // kernel, padding
  TRIB_DW_HD int64_t oh() const { return h + 2 * p - k + 1; }
  TRIB_DW_HD int64_t ow() const { return w + 2 * p - k + 1; }
  TRIB_DW_HD int64_t in_size() const { return h * w * c; }
  TRIB_DW_HD int64_t out_size() const { return oh() * ow() * c; }
};

// One output value of one sample (`x` the sample's input): its taps, then the bias.
TRIB_DW_HD inline float DepthwiseOutput(const DepthwiseGeometry& g, const float* x,
                                        const float* weight, const float* bias, int64_t oy,
                                        int64_t ox, int64_t ch) {
  const float* wk = weight + ch * g.k * g.k;
  float acc = 0.0f;
  for (int64_t ky = 0; ky < g.k; ++ky) {
    const int64_t iy = oy + ky - g.p;
    if (iy < 0 || iy >= g.h) continue;
    for (int64_t kx = 0; kx < g.k; ++kx) {
      const int64_t ix = ox + kx - g.p;
      if (ix < 0 || ix >= g.w) continue;
      acc += x[(iy * g.w + ix) * g.c + ch] * wk[ky * g.k + kx];
    }
  }
  return acc + bias[ch];
}

// The gradient of one input value of one sample (`dy` the sample's output gradient): every output
// that read it, in (ky, kx) order.
TRIB_DW_HD inline float DepthwiseInputGrad(const DepthwiseGeometry& g, const float* dy,
                                           const float* weight, int64_t iy, int64_t ix,
                                           int64_t ch) {
  const float* wk = weight + ch * g.k * g.k;
  const int64_t oh = g.oh(), ow = g.ow();
  float acc = 0.0f;
  for (int64_t ky = 0; ky < g.k; ++ky) {
    const int64_t oy = iy + g.p - ky;
    if (oy < 0 || oy >= oh) continue;
    for (int64_t kx = 0; kx < g.k; ++kx) {
      const int64_t ox = ix + g.p - kx;
      if (ox < 0 || ox >= ow) continue;
      acc += dy[(oy * ow + ox) * g.c + ch] * wk[ky * g.k + kx];
    }
  }
  return acc;
}

// One sample's part of the gradient of weight[ch][ky][kx]: the sum over its output positions.
TRIB_DW_HD inline float DepthwiseWeightGrad(const DepthwiseGeometry& g, const float* x,
                                            const float* dy, int64_t ky, int64_t kx, int64_t ch) {
  const int64_t oh = g.oh(), ow = g.ow();
  float acc = 0.0f;
  for (int64_t oy = 0; oy < oh; ++oy) {
    const int64_t iy = oy + ky - g.p;
    if (iy < 0 || iy >= g.h) continue;
    for (int64_t ox = 0; ox < ow; ++ox) {
      const int64_t ix = ox + kx - g.p;
      if (ix < 0 || ix >= g.w) continue;
      acc += dy[(oy * ow + ox) * g.c + ch] * x[(iy * g.w + ix) * g.c + ch];
    }
  }
  return acc;
}

// One sample's part of the gradient of bias[ch].
TRIB_DW_HD inline float DepthwiseBiasGrad(const DepthwiseGeometry& g, const float* dy, int64_t ch) {
  const int64_t positions = g.oh() * g.ow();
  float acc = 0.0f;
  for (int64_t i = 0; i < positions; ++i) acc += dy[i * g.c + ch];
  return acc;
}

}  // namespace tributary
