#include "train/cpu/direct_conv.h"

#include <cstring>

#include "train/cpu/gemm.h"

// The baseline copy (SSE2 on x86-64; the only copy elsewhere).
#define TRIB_CONV_NS base
#include "train/cpu/direct_conv_kernel.inc"

namespace tributary::cpu {

#if TRIBUTARY_GEMM_AVX2
#define TRIB_DECLARE_CONV_COPY(ns)                                                       \
  namespace ns {                                                                         \
  int64_t Lanes();                                                                       \
  int64_t PixelSpan();                                                                   \
  void Forward(const DirectConvShape& s, const float* x, int64_t n, const float* packed, \
               const float* bias, float* out);                                           \
  void FilterGrad(const DirectConvShape& s, const float* x, int64_t n, const float* dy,  \
                  float* grad, float* scratch);                                          \
  }
TRIB_DECLARE_CONV_COPY(avx2)
TRIB_DECLARE_CONV_COPY(avx512)
#undef TRIB_DECLARE_CONV_COPY
#endif

namespace {

struct DirectConvKernels {
  int64_t (*lanes)();
  int64_t (*pixel_span)();
  void (*forward)(const DirectConvShape&, const float*, int64_t, const float*, const float*,
                  float*);
  void (*filter_grad)(const DirectConvShape&, const float*, int64_t, const float*, float*, float*);
};

// The copy for Gemm's path (gemm.h), so that one process runs all its kernels on one path.
const DirectConvKernels& ChosenKernels() {
  static const DirectConvKernels kernels = [] {
#if TRIBUTARY_GEMM_AVX2
    switch (ChosenSimdPath()) {
      case SimdPath::kAvx512:
        return DirectConvKernels{avx512::Lanes, avx512::PixelSpan, avx512::Forward,
                                 avx512::FilterGrad};
      case SimdPath::kAvx2:
        return DirectConvKernels{avx2::Lanes, avx2::PixelSpan, avx2::Forward, avx2::FilterGrad};
      default:
        break;
    }
#endif
    return DirectConvKernels{base::Lanes, base::PixelSpan, base::Forward, base::FilterGrad};
  }();
  return kernels;
}

}  // namespace

int64_t DirectConvLanes() { return ChosenKernels().lanes(); }

int64_t DirectConvPaddedChannels(int64_t oc) {
  const int64_t lanes = DirectConvLanes();
  return (oc + lanes - 1) / lanes * lanes;
}

void PackDirectConvWeights(const DirectConvShape& g, const float* wt, float* packed) {
  const int64_t taps = g.taps(), ocp = DirectConvPaddedChannels(g.oc);
  for (int64_t t = 0; t < taps; ++t) {
    float* row = packed + t * ocp;
    for (int64_t o = 0; o < g.oc; ++o) row[o] = wt[o * taps + t];
    for (int64_t o = g.oc; o < ocp; ++o) row[o] = 0.0f;
  }
}

void UnpackDirectConvWeights(const DirectConvShape& g, const float* packed, float* wt) {
  const int64_t taps = g.taps(), ocp = DirectConvPaddedChannels(g.oc);
  for (int64_t o = 0; o < g.oc; ++o)
    for (int64_t t = 0; t < taps; ++t) wt[o * taps + t] = packed[t * ocp + o];
}

bool DirectConvCopiesInput(const DirectConvShape& g) { return g.ph > 0 || g.pw > 0 || g.c == 1; }

int64_t DirectConvPaddedFloats(const DirectConvShape& g, int64_t n) {
  return n * g.padded_h() * g.padded_w() * g.c + ChosenKernels().pixel_span() + g.kw;
}

int64_t DirectConvScratchFloats(const DirectConvShape& g) {
  const int64_t ocp = DirectConvPaddedChannels(g.oc), pix = g.oh() * g.ow();
  if (g.c != 1) return pix * g.oc + ocp;
  const int64_t span = ChosenKernels().pixel_span(), row_span = (g.ow() + span - 1) / span * span;
  return g.oc * g.oh() * row_span + g.oc * g.taps() * span;
}

void PadDirectConvInput(const DirectConvShape& g, const float* in, int64_t n, float* padded) {
  const int64_t pw = g.padded_w(), ph = g.padded_h(), row = g.w * g.c;
  const int64_t in_size = g.h * row, out_size = ph * pw * g.c;
  std::memset(padded + n * out_size, 0,
              sizeof(float) * static_cast<size_t>(DirectConvPaddedFloats(g, n) - n * out_size));
  for (int64_t s = 0; s < n; ++s) {
    float* dst = padded + s * out_size;
    std::memset(dst, 0, sizeof(float) * static_cast<size_t>(out_size));
    for (int64_t y = 0; y < g.h; ++y)
      std::memcpy(dst + ((y + g.ph) * pw + g.pw) * g.c, in + s * in_size + y * row,
                  sizeof(float) * static_cast<size_t>(row));
  }
}

void DirectConvForward(const DirectConvShape& g, const float* x, int64_t n, const float* packed,
                       const float* bias, float* out) {
  ChosenKernels().forward(g, x, n, packed, bias, out);
}

void DirectConvFilterGrad(const DirectConvShape& g, const float* x, int64_t n, const float* dy,
                          float* grad, float* scratch) {
  ChosenKernels().filter_grad(g, x, n, dy, grad, scratch);
}

}  // namespace tributary::cpu
