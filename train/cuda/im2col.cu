// im2col and its adjoint col2im for stride-1 convolutions on NHWC input (see kernels.h for the
// column layout, which matches train/cpu/conv2d.cc so the OHWI weight is the [oc, taps] matrix).
//
// The kernels are templated on the index type: their cost is mostly integer division, which is
// several times cheaper in 32 bits, so the launchers use int32_t whenever every index fits.
#include <cstdint>
#include <limits>

#include "train/cuda/kernels.h"
#include "train/cuda/launch.cuh"

namespace tributary::cuda {
namespace {

// ConvGeometry narrowed to the index type I.
template <typename I>
struct Geometry {
  I h, w, c, kh, kw, ph, pw, oh, ow, taps;
  explicit Geometry(const ConvGeometry& g)
      : h(static_cast<I>(g.h)),
        w(static_cast<I>(g.w)),
        c(static_cast<I>(g.c)),
        kh(static_cast<I>(g.kh)),
        kw(static_cast<I>(g.kw)),
        ph(static_cast<I>(g.ph)),
        pw(static_cast<I>(g.pw)),
        oh(static_cast<I>(g.oh)),
        ow(static_cast<I>(g.ow)),
        taps(static_cast<I>(g.taps())) {}
};

// The input value that column entry (row, tap) copies, or 0 in the padding.
template <typename I>
__device__ inline float Im2ColValue(const float* __restrict__ in, const Geometry<I>& g, I row,
                                    I tap) {
  const I ox = row % g.ow, t = row / g.ow;
  const I oy = t % g.oh, s = t / g.oh;
  const I ic = tap % g.c, kk = tap / g.c;
  const I kx = kk % g.kw, ky = kk / g.kw;
  const I iy = oy + ky - g.ph, ix = ox + kx - g.pw;
  if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) return 0.0f;
  return in[((s * g.h + iy) * g.w + ix) * g.c + ic];
}

template <typename I>
__global__ void Im2ColKernel(const float* __restrict__ in, I total, Geometry<I> g,
                             float* __restrict__ cols) {
  for (int64_t j = GlobalIndex(); j < total; j += GridStride()) {
    const I i = static_cast<I>(j);
    cols[i] = Im2ColValue<I>(in, g, i / g.taps, i % g.taps);
  }
}

// One thread per input element: sums, in a fixed (ky, kx) order, the column entries that im2col
// copied from it. A gather rather than a scatter, so no atomics and a deterministic result.
template <typename I>
__global__ void Col2ImKernel(const float* __restrict__ cols, I total, Geometry<I> g,
                             float* __restrict__ grad_in) {
  for (int64_t j = GlobalIndex(); j < total; j += GridStride()) {
    const I i = static_cast<I>(j);
    const I ic = i % g.c, t0 = i / g.c;
    const I ix = t0 % g.w, t1 = t0 / g.w;
    const I iy = t1 % g.h, s = t1 / g.h;
    float acc = 0.0f;
    for (I ky = 0; ky < g.kh; ++ky) {
      const I oy = iy + g.ph - ky;
      if (oy < 0 || oy >= g.oh) continue;
      for (I kx = 0; kx < g.kw; ++kx) {
        const I ox = ix + g.pw - kx;
        if (ox < 0 || ox >= g.ow) continue;
        acc += cols[((s * g.oh + oy) * g.ow + ox) * g.taps + (ky * g.kw + kx) * g.c + ic];
      }
    }
    grad_in[i] = acc;
  }
}

// Every index of im2col's output and col2im's input is below this (the columns are the larger
// side).
int64_t LargestIndex(int64_t n, const ConvGeometry& g) {
  const int64_t cols = n * g.oh * g.ow * g.taps(), in = n * g.h * g.w * g.c;
  return cols > in ? cols : in;
}
bool Fits32(int64_t n, const ConvGeometry& g) {
  return LargestIndex(n, g) <= std::numeric_limits<int32_t>::max();
}

}  // namespace

cudaError_t LaunchIm2Col(const float* in, int64_t n, const ConvGeometry& g, float* cols,
                         cudaStream_t stream) {
  const int64_t total = n * g.oh * g.ow * g.taps();
  if (Fits32(n, g)) {
    TRIB_LAUNCH(Im2ColKernel<int32_t>, GridFor(total), kThreads, stream)
    (in, static_cast<int32_t>(total), Geometry<int32_t>(g), cols);
  } else {
    TRIB_LAUNCH(Im2ColKernel<int64_t>, GridFor(total), kThreads, stream)
    (in, total, Geometry<int64_t>(g), cols);
  }
  return LaunchStatus();
}

cudaError_t LaunchCol2Im(const float* cols, int64_t n, const ConvGeometry& g, float* grad_in,
                         cudaStream_t stream) {
  const int64_t total = n * g.h * g.w * g.c;
  if (Fits32(n, g)) {
    TRIB_LAUNCH(Col2ImKernel<int32_t>, GridFor(total), kThreads, stream)
    (cols, static_cast<int32_t>(total), Geometry<int32_t>(g), grad_in);
  } else {
    TRIB_LAUNCH(Col2ImKernel<int64_t>, GridFor(total), kThreads, stream)
    (cols, total, Geometry<int64_t>(g), grad_in);
  }
  return LaunchStatus();
}

}  // namespace tributary::cuda
