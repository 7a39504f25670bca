// GRU step kernels (kernels.h), with the CPU's arithmetic for every gate and hidden value
// (train/gru_math.h); the GEMMs and bias additions between them run as the layer issues them
// (train/cuda/gru.cc). One thread per (sample, unit).
#include "train/cuda/kernels.h"
#include "train/cuda/launch.cuh"
#include "train/gru_math.h"

namespace tributary::cuda {
namespace {

__global__ void GruStepForwardKernel(RecurrentShape sh, int64_t n, int64_t t,
                                     const float* __restrict__ ax, const float* __restrict__ ah,
                                     const float* __restrict__ h_prev,
                                     const int32_t* __restrict__ lengths, float* __restrict__ gates,
                                     float* __restrict__ h_next, float* __restrict__ out) {
  const int64_t H = sh.units, G = 3 * H;
  for (int64_t i = GlobalIndex(); i < n * H; i += GridStride()) {
    const int64_t s = i / H, u = i % H;
    if (lengths && t >= lengths[s]) {  // padding: the state stays, the output is zero
      h_next[i] = h_prev[i];
      if (sh.sequences) out[(s * sh.steps + t) * H + u] = 0.0f;
      continue;
    }
    const float* x = ax + (s * sh.steps + t) * G;
    const float* a = ah + s * G;
    const GruGates g = GruGatesOf(x[u], x[H + u], x[2 * H + u], a[u], a[H + u], a[2 * H + u]);
    float* out_g = gates + s * G;
    out_g[u] = g.r;
    out_g[H + u] = g.z;
    out_g[2 * H + u] = g.n;
    const float h = GruHiddenOf(g, h_prev[i]);
    h_next[i] = h;
    if (sh.sequences) out[(s * sh.steps + t) * H + u] = h;
  }
}

__global__ void GruStepBackwardKernel(RecurrentShape sh, int64_t n, int64_t t,
                                      const float* __restrict__ gates, const float* __restrict__ ah,
                                      const float* __restrict__ h_prev,
                                      const float* __restrict__ grad_out,
                                      const int32_t* __restrict__ lengths,
                                      const float* __restrict__ dh_in, float* __restrict__ direct,
                                      float* __restrict__ dax, float* __restrict__ dah,
                                      float* __restrict__ dah_all) {
  const int64_t H = sh.units, G = 3 * H, T = sh.steps;
  for (int64_t i = GlobalIndex(); i < n * H; i += GridStride()) {
    const int64_t s = i / H, u = i % H;
    const float* dy = sh.sequences ? grad_out + (s * T + t) * H
                      : t == T - 1 ? grad_out + s * H
                                   : nullptr;
    if (lengths && t >= lengths[s]) {
      // A padded step: nothing flows into its gates; the state's gradient passes as `direct`.
      for (int k = 0; k < 3; ++k) {
        dax[(s * T + t) * G + k * H + u] = 0.0f;
        dah[s * G + k * H + u] = 0.0f;
        dah_all[(s * T + t) * G + k * H + u] = 0.0f;
      }
      direct[i] = dh_in[i] + (dy && !sh.sequences ? dy[u] : 0.0f);
      continue;
    }
    const float dh = dy ? dh_in[i] + dy[u] : dh_in[i];
    const float* g = gates + s * G;
    float x3[3], h3[3];
    direct[i] = GruCellBackward(GruGates{g[u], g[H + u], g[2 * H + u]}, ah[s * G + 2 * H + u],
                                h_prev[i], dh, x3, h3);
    for (int k = 0; k < 3; ++k) {
      dax[(s * T + t) * G + k * H + u] = x3[k];
      dah[s * G + k * H + u] = h3[k];
      dah_all[(s * T + t) * G + k * H + u] = h3[k];
    }
  }
}

}  // namespace

cudaError_t LaunchGruStepForward(const RecurrentShape& sh, int64_t n, int64_t t, const float* ax,
                                 const float* ah, const float* h_prev, const int32_t* lengths,
                                 float* gates, float* h_next, float* out, cudaStream_t stream) {
  TRIB_LAUNCH(GruStepForwardKernel, GridFor(n * sh.units), kThreads, stream)
  (sh, n, t, ax, ah, h_prev, lengths, gates, h_next, out);
  return LaunchStatus();
}

cudaError_t LaunchGruStepBackward(const RecurrentShape& sh, int64_t n, int64_t t,
                                  const float* gates, const float* ah, const float* h_prev,
                                  const float* grad_out, const int32_t* lengths, const float* dh,
                                  float* direct, float* dax, float* dah, float* dah_all,
                                  cudaStream_t stream) {
  TRIB_LAUNCH(GruStepBackwardKernel, GridFor(n * sh.units), kThreads, stream)
  (sh, n, t, gates, ah, h_prev, grad_out, lengths, dh, direct, dax, dah, dah_all);
  return LaunchStatus();
}

}  // namespace tributary::cuda
