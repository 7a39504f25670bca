#include "train/cpu/lstm.h"

#include <algorithm>

#include "train/cpu/gemm.h"
#include "train/lstm_math.h"

namespace tributary::cpu {

void Lstm::Forward(const float* in, float* out, int64_t n) {
  const int64_t T = sh_.steps, H = sh_.units, G = 4 * sh_.units;
  zx_.resize(static_cast<size_t>(n * T * G));
  gates_.resize(static_cast<size_t>(T * n * G));
  cells_.resize(static_cast<size_t>((T + 1) * n * H));
  hidden_.resize(static_cast<size_t>((T + 1) * n * H));
  // Step 0 is the zero state; each step below writes all of the next one.
  std::fill(cells_.begin(), cells_.begin() + n * H, 0.0f);
  std::fill(hidden_.begin(), hidden_.begin() + n * H, 0.0f);
  z_.resize(static_cast<size_t>(n * G));
  Gemm(false, true, n * T, G, sh_.features, in, p_.w_ih, zx_.data(),
       false);  // x W_ih^T, every step
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t s = 0; s < n; ++s) {
      const float* zx = zx_.data() + (s * T + t) * G;
      float* z = z_.data() + s * G;
      for (int64_t j = 0; j < G; ++j) z[j] = zx[j] + p_.b_ih[j] + p_.b_hh[j];
    }
    Gemm(false, true, n, G, H, At(hidden_, t, n, H), p_.w_hh, z_.data(), true);  // + h W_hh^T
    const float* c_prev = At(cells_, t, n, H);
    float* c_next = At(cells_, t + 1, n, H);
    float* h_next = At(hidden_, t + 1, n, H);
    float* gates = At(gates_, t, n, G);
    for (int64_t s = 0; s < n; ++s) {
      if (lengths_ && t >= lengths_[s]) {  // padding: the state stays, the output is zero
        std::copy(c_prev + s * H, c_prev + (s + 1) * H, c_next + s * H);
        const float* h_prev = At(hidden_, t, n, H) + s * H;
        std::copy(h_prev, h_prev + H, h_next + s * H);
        if (sh_.sequences) std::fill_n(out + (s * T + t) * H, H, 0.0f);
        continue;
      }
      const float* z = z_.data() + s * G;
      float* a = gates + s * G;
      for (int64_t u = 0; u < H; ++u) {
        const LstmGates g = LstmGatesOf(z[u], z[H + u], z[2 * H + u], z[3 * H + u]);
        a[u] = g.i;
        a[H + u] = g.f;
        a[2 * H + u] = g.g;
        a[3 * H + u] = g.o;
        const float c = LstmCellOf(g, c_prev[s * H + u]);
        c_next[s * H + u] = c;
        h_next[s * H + u] = LstmHiddenOf(g, c);
      }
      if (sh_.sequences) std::copy(h_next + s * H, h_next + (s + 1) * H, out + (s * T + t) * H);
    }
  }
  if (!sh_.sequences) std::copy(At(hidden_, T, n, H), At(hidden_, T, n, H) + n * H, out);
}

void Lstm::Backward(const float* in, const float*, const float* grad_out, float* grad_in,
                    int64_t n) {
  const int64_t T = sh_.steps, H = sh_.units, G = 4 * sh_.units;
  dz_all_.resize(static_cast<size_t>(n * T * G));
  dh_.assign(static_cast<size_t>(n * H), 0.0f);
  dc_.assign(static_cast<size_t>(n * H), 0.0f);
  if (lengths_) carry_.resize(static_cast<size_t>(n * H));
  for (int64_t t = T - 1; t >= 0; --t) {
    const float* gates = At(gates_, t, n, G);
    const float* c_prev = At(cells_, t, n, H);
    const float* c_now = At(cells_, t + 1, n, H);
    for (int64_t s = 0; s < n; ++s) {
      const float* a = gates + s * G;
      const float* dy = sh_.sequences ? grad_out + (s * T + t) * H
                        : t == T - 1  ? grad_out + s * H
                                      : nullptr;
      float* dz = z_.data() + s * G;
      if (lengths_ && t >= lengths_[s]) {
        // A padded step: nothing flows into its gates; the state's gradients pass through (and
        // the last output's, which is the state at the sample's length).
        std::fill_n(dz, G, 0.0f);
        std::fill_n(dz_all_.data() + (s * T + t) * G, G, 0.0f);
        for (int64_t u = 0; u < H; ++u)
          carry_[s * H + u] = dh_[s * H + u] + (dy && !sh_.sequences ? dy[u] : 0.0f);
        continue;
      }
      for (int64_t u = 0; u < H; ++u) {
        const float dh = dy ? dh_[s * H + u] + dy[u] : dh_[s * H + u];
        float d[4];
        dc_[s * H + u] =
            LstmCellBackward(LstmGates{a[u], a[H + u], a[2 * H + u], a[3 * H + u]},
                             c_prev[s * H + u], c_now[s * H + u], dh, dc_[s * H + u], d);
        for (int k = 0; k < 4; ++k) dz[k * H + u] = d[k];
      }
      std::copy(dz, dz + G, dz_all_.data() + (s * T + t) * G);
    }
    // dW_hh += dz^T h_{t-1}; the gradient reaching h_{t-1}: dz W_hh.
    Gemm(true, false, G, H, n, z_.data(), At(hidden_, t, n, H), d_.w_hh, t != T - 1);
    Gemm(false, false, n, H, G, z_.data(), p_.w_hh, dh_.data(), false);
    if (lengths_)
      for (int64_t s = 0; s < n; ++s)
        if (t >= lengths_[s]) std::copy_n(carry_.data() + s * H, H, dh_.data() + s * H);
  }
  Gemm(true, false, G, sh_.features, n * T, dz_all_.data(), in, d_.w_ih, false);  // dz^T x
  std::fill(d_.b_ih, d_.b_ih + G, 0.0f);
  for (int64_t r = 0; r < n * T; ++r) {
    const float* dz = dz_all_.data() + r * G;
    for (int64_t j = 0; j < G; ++j) d_.b_ih[j] += dz[j];
  }
  std::copy(d_.b_ih, d_.b_ih + G, d_.b_hh);
  if (grad_in) Gemm(false, false, n * T, sh_.features, G, dz_all_.data(), p_.w_ih, grad_in, false);
}

}  // namespace tributary::cpu
