// LSTM step kernels (kernels.h), with the CPU's arithmetic for every gate, cell and hidden value
// (train/lstm_math.h); the GEMMs between them run on cuBLAS (train/cuda/lstm.cc). One thread per
// (sample, unit) or per pre-activation.
#include "train/cuda/kernels.h"
#include "train/cuda/launch.cuh"
#include "train/lstm_math.h"

namespace tributary::cuda {
namespace {

__global__ void LstmStepInputKernel(RecurrentShape sh, int64_t n, int64_t t,
                                    const float* __restrict__ zx, const float* __restrict__ b_ih,
                                    const float* __restrict__ b_hh, float* __restrict__ z) {
  const int64_t G = 4 * sh.units;
  for (int64_t i = GlobalIndex(); i < n * G; i += GridStride()) {
    const int64_t s = i / G, j = i % G;
    z[i] = zx[(s * sh.steps + t) * G + j] + b_ih[j] + b_hh[j];
  }
}

__global__ void LstmStepForwardKernel(RecurrentShape sh, int64_t n, int64_t t,
                                      const float* __restrict__ z, const float* __restrict__ c_prev,
                                      const float* __restrict__ h_prev,
                                      const int32_t* __restrict__ lengths,
                                      float* __restrict__ gates, float* __restrict__ c_next,
                                      float* __restrict__ h_next, float* __restrict__ out) {
  const int64_t H = sh.units, G = 4 * H;
  for (int64_t i = GlobalIndex(); i < n * H; i += GridStride()) {
    const int64_t s = i / H, u = i % H;
    if (lengths && t >= lengths[s]) {  // padding: the state stays, the output is zero
      c_next[i] = c_prev[i];
      h_next[i] = h_prev[i];
      if (sh.sequences) out[(s * sh.steps + t) * H + u] = 0.0f;
      continue;
    }
    const float* zs = z + s * G;
    const LstmGates g = LstmGatesOf(zs[u], zs[H + u], zs[2 * H + u], zs[3 * H + u]);
    float* a = gates + s * G;
    a[u] = g.i;
    a[H + u] = g.f;
    a[2 * H + u] = g.g;
    a[3 * H + u] = g.o;
    const float c = LstmCellOf(g, c_prev[i]);
    const float h = LstmHiddenOf(g, c);
    c_next[i] = c;
    h_next[i] = h;
    if (sh.sequences) out[(s * sh.steps + t) * H + u] = h;
  }
}

__global__ void LstmStepBackwardKernel(
    RecurrentShape sh, int64_t n, int64_t t, const float* __restrict__ gates,
    const float* __restrict__ c_prev, const float* __restrict__ c_now,
    const float* __restrict__ grad_out, const int32_t* __restrict__ lengths,
    const float* __restrict__ dh_in, float* __restrict__ dc, float* __restrict__ dz,
    float* __restrict__ dz_all, float* __restrict__ carry) {
  const int64_t H = sh.units, G = 4 * H, T = sh.steps;
  for (int64_t i = GlobalIndex(); i < n * H; i += GridStride()) {
    const int64_t s = i / H, u = i % H;
    const float* dy = sh.sequences ? grad_out + (s * T + t) * H
                      : t == T - 1 ? grad_out + s * H
                                   : nullptr;
    if (lengths && t >= lengths[s]) {
      // A padded step: nothing flows into its gates; dc stays, and dh (with the last output's
      // gradient) is carried past the dh GEMM (LstmCarryKernel).
      for (int k = 0; k < 4; ++k) {
        dz[s * G + k * H + u] = 0.0f;
        dz_all[(s * T + t) * G + k * H + u] = 0.0f;
      }
      carry[i] = dh_in[i] + (dy && !sh.sequences ? dy[u] : 0.0f);
      continue;
    }
    const float dh = dy ? dh_in[i] + dy[u] : dh_in[i];
    const float* a = gates + s * G;
    float d[4];
    dc[i] = LstmCellBackward(LstmGates{a[u], a[H + u], a[2 * H + u], a[3 * H + u]}, c_prev[i],
                             c_now[i], dh, dc[i], d);
    for (int k = 0; k < 4; ++k) {
      dz[s * G + k * H + u] = d[k];
      dz_all[(s * T + t) * G + k * H + u] = d[k];
    }
  }
}

__global__ void LstmCarryKernel(RecurrentShape sh, int64_t n, int64_t t,
                                const int32_t* __restrict__ lengths,
                                const float* __restrict__ carry, float* __restrict__ dh) {
  const int64_t H = sh.units;
  for (int64_t i = GlobalIndex(); i < n * H; i += GridStride())
    if (t >= lengths[i / H]) dh[i] = carry[i];
}

}  // namespace

cudaError_t LaunchLstmStepInput(const RecurrentShape& sh, int64_t n, int64_t t, const float* zx,
                                const float* b_ih, const float* b_hh, float* z,
                                cudaStream_t stream) {
  TRIB_LAUNCH(LstmStepInputKernel, GridFor(n * 4 * sh.units), kThreads, stream)
  (sh, n, t, zx, b_ih, b_hh, z);
  return LaunchStatus();
}

cudaError_t LaunchLstmStepForward(const RecurrentShape& sh, int64_t n, int64_t t, const float* z,
                                  const float* c_prev, const float* h_prev, const int32_t* lengths,
                                  float* gates, float* c_next, float* h_next, float* out,
                                  cudaStream_t stream) {
  TRIB_LAUNCH(LstmStepForwardKernel, GridFor(n * sh.units), kThreads, stream)
  (sh, n, t, z, c_prev, h_prev, lengths, gates, c_next, h_next, out);
  return LaunchStatus();
}

cudaError_t LaunchLstmStepBackward(const RecurrentShape& sh, int64_t n, int64_t t,
                                   const float* gates, const float* c_prev, const float* c_now,
                                   const float* grad_out, const int32_t* lengths, const float* dh,
                                   float* dc, float* dz, float* dz_all, float* carry,
                                   cudaStream_t stream) {
  TRIB_LAUNCH(LstmStepBackwardKernel, GridFor(n * sh.units), kThreads, stream)
  (sh, n, t, gates, c_prev, c_now, grad_out, lengths, dh, dc, dz, dz_all, carry);
  return LaunchStatus();
}

cudaError_t LaunchLstmCarry(const RecurrentShape& sh, int64_t n, int64_t t, const int32_t* lengths,
                            const float* carry, float* dh, cudaStream_t stream) {
  TRIB_LAUNCH(LstmCarryKernel, GridFor(n * sh.units), kThreads, stream)
  (sh, n, t, lengths, carry, dh);
  return LaunchStatus();
}

}  // namespace tributary::cuda
