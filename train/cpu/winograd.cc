#include "train/cpu/winograd.h"

#include "train/cpu/gemm.h"

// The baseline copy (SSE2 on x86-64; the only copy elsewhere).
#define TRIB_WINO_NS base
#include "train/cpu/winograd_kernel.inc"

namespace tributary::cpu {

#define TRIB_DECLARE_WINO_COPY(ns)                                                            \
  namespace ns {                                                                              \
  void Input(int r, const float* x, int64_t n, int64_t steps, int64_t c, int64_t pad,         \
             int64_t tiles, float* v);                                                        \
  void Output(int r, const float* m, int64_t n, int64_t steps, int64_t k, int64_t tiles,      \
              const float* bias, float* y);                                                   \
  void GradOutput(int r, const float* dy, int64_t n, int64_t steps, int64_t k, int64_t tiles, \
                  float* z);                                                                  \
  void Weights(int r, const float* w, int64_t oc, int64_t c, bool reversed, float* u);        \
  void FilterGrad(int r, const float* d, int64_t oc, int64_t c, float* dw);                   \
  }
#if TRIBUTARY_GEMM_AVX2
TRIB_DECLARE_WINO_COPY(avx2)
TRIB_DECLARE_WINO_COPY(avx512)
#endif
#undef TRIB_DECLARE_WINO_COPY

namespace {

struct WinogradKernels {
  decltype(&base::Input) input;
  decltype(&base::Output) output;
  decltype(&base::GradOutput) grad_output;
  decltype(&base::Weights) weights;
  decltype(&base::FilterGrad) filter_grad;
};

// The copy for Gemm's path (gemm.h), so that one process runs all its kernels on one path.
const WinogradKernels& ChosenKernels() {
  static const WinogradKernels kernels = [] {
#if TRIBUTARY_GEMM_AVX2
    switch (ChosenSimdPath()) {
      case SimdPath::kAvx512:
        return WinogradKernels{avx512::Input, avx512::Output, avx512::GradOutput, avx512::Weights,
                               avx512::FilterGrad};
      case SimdPath::kAvx2:
        return WinogradKernels{avx2::Input, avx2::Output, avx2::GradOutput, avx2::Weights,
                               avx2::FilterGrad};
      default:
        break;
    }
#endif
    return WinogradKernels{base::Input, base::Output, base::GradOutput, base::Weights,
                           base::FilterGrad};
  }();
  return kernels;
}

// The baseline copy's compile-time matrices (winograd_kernel.inc; every copy computes the same
// ones), for the weights' transforms and the tests.
template <int R>
WinogradMatrices Copy() {
  const auto& k = base::kMatrices<R>;
  WinogradMatrices w;
  w.r = R;
  w.a = w.m + R - 1;
  for (int x = 0; x < w.a; ++x)
    for (int l = 0; l < w.a; ++l) w.bt.push_back(k.bt[x][l]);
  for (int x = 0; x < w.a; ++x)
    for (int j = 0; j < R; ++j) w.g.push_back(k.g[x][j]);
  for (int i = 0; i < w.m; ++i)
    for (int x = 0; x < w.a; ++x) w.at.push_back(k.at[i][x]);
  return w;
}

}  // namespace

bool WinogradSupports(int64_t r) { return r == 3 || r == 5; }

const WinogradMatrices& WinogradFor(int64_t r) {
  static const WinogradMatrices f3 = Copy<3>(), f5 = Copy<5>();
  return r == 5 ? f5 : f3;
}

void WinogradInput(const WinogradMatrices& w, const float* x, int64_t n, int64_t steps, int64_t c,
                   int64_t pad, int64_t tiles, float* v) {
  ChosenKernels().input(w.r, x, n, steps, c, pad, tiles, v);
}

void WinogradOutput(const WinogradMatrices& w, const float* m, int64_t n, int64_t steps, int64_t k,
                    int64_t tiles, const float* bias, float* y) {
  ChosenKernels().output(w.r, m, n, steps, k, tiles, bias, y);
}

void WinogradGradOutput(const WinogradMatrices& w, const float* dy, int64_t n, int64_t steps,
                        int64_t k, int64_t tiles, float* z) {
  ChosenKernels().grad_output(w.r, dy, n, steps, k, tiles, z);
}

void WinogradWeights(const WinogradMatrices& w, const float* wt, int64_t oc, int64_t c,
                     bool reversed, float* u) {
  ChosenKernels().weights(w.r, wt, oc, c, reversed, u);
}

void WinogradFilterGrad(const WinogradMatrices& w, const float* d, int64_t oc, int64_t c,
                        float* dw) {
  ChosenKernels().filter_grad(w.r, d, oc, c, dw);
}

}  // namespace tributary::cpu
