#include "train/cpu/gru.h"

#include <algorithm>

#include "train/cpu/gemm.h"

namespace tributary::cpu {
namespace {

// b added to each of `rows` rows of `width` values.
void GruAddRows(float* m, const float* b, int64_t rows, int64_t width) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < width; ++j) m[r * width + j] += b[j];
}

// db = the column sums of `rows` rows of `width` values, in row order.
void GruColumnSums(const float* m, int64_t rows, int64_t width, float* db) {
  std::fill(db, db + width, 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < width; ++j) db[j] += m[r * width + j];
}

}  // namespace

void Gru::Forward(const float* in, float* out, int64_t n) {
  const int64_t T = sh_.steps, H = sh_.units, G = 3 * H;
  ax_.resize(static_cast<size_t>(n * T * G));
  ah_.resize(static_cast<size_t>(T * n * G));
  gates_.resize(static_cast<size_t>(T * n * G));
  hidden_.resize(static_cast<size_t>((T + 1) * n * H));
  std::fill(hidden_.begin(), hidden_.begin() + n * H, 0.0f);  // step 0: the zero state
  Gemm(false, true, n * T, G, sh_.features, in, p_.w_ih, ax_.data(), false);  // x W_ih^T
  GruAddRows(ax_.data(), p_.b_ih, n * T, G);
  for (int64_t t = 0; t < T; ++t) {
    const float* h_prev = hidden_.data() + t * n * H;
    float* h_next = hidden_.data() + (t + 1) * n * H;
    float* ah = ah_.data() + t * n * G;
    float* gates = gates_.data() + t * n * G;
    Gemm(false, true, n, G, H, h_prev, p_.w_hh, ah, false);  // h W_hh^T
    GruAddRows(ah, p_.b_hh, n, G);
    for (int64_t s = 0; s < n; ++s) {
      if (lengths_ && t >= lengths_[s]) {  // padding: the state stays, the output is zero
        std::copy(h_prev + s * H, h_prev + (s + 1) * H, h_next + s * H);
        if (sh_.sequences) std::fill_n(out + (s * T + t) * H, H, 0.0f);
        continue;
      }
      const float* ax = ax_.data() + (s * T + t) * G;
      const float* as = ah + s * G;
      float* g = gates + s * G;
      for (int64_t u = 0; u < H; ++u) {
        const GruGates a =
            GruGatesOf(ax[u], ax[H + u], ax[2 * H + u], as[u], as[H + u], as[2 * H + u]);
        g[u] = a.r;
        g[H + u] = a.z;
        g[2 * H + u] = a.n;
        h_next[s * H + u] = GruHiddenOf(a, h_prev[s * H + u]);
      }
      if (sh_.sequences) std::copy(h_next + s * H, h_next + (s + 1) * H, out + (s * T + t) * H);
    }
  }
  if (!sh_.sequences) std::copy(hidden_.data() + T * n * H, hidden_.data() + (T + 1) * n * H, out);
}

void Gru::Backward(const float* in, const float*, const float* grad_out, float* grad_in,
                   int64_t n) {
  const int64_t T = sh_.steps, H = sh_.units, G = 3 * H;
  dax_.resize(static_cast<size_t>(n * T * G));
  dah_all_.resize(static_cast<size_t>(n * T * G));
  dah_.resize(static_cast<size_t>(n * G));
  direct_.resize(static_cast<size_t>(n * H));
  dh_.assign(static_cast<size_t>(n * H), 0.0f);
  for (int64_t t = T - 1; t >= 0; --t) {
    const float* h_prev = hidden_.data() + t * n * H;
    const float* ah = ah_.data() + t * n * G;
    const float* gates = gates_.data() + t * n * G;
    for (int64_t s = 0; s < n; ++s) {
      const float* g = gates + s * G;
      const float* dy = sh_.sequences ? grad_out + (s * T + t) * H
                        : t == T - 1  ? grad_out + s * H
                                      : nullptr;
      float* dx = dax_.data() + (s * T + t) * G;
      float* dh3 = dah_.data() + s * G;
      if (lengths_ && t >= lengths_[s]) {
        // A padded step: nothing flows into its gates; the state's gradient passes through
        // (`direct`, with the last output's, which is the state at the sample's length).
        std::fill_n(dx, G, 0.0f);
        std::fill_n(dh3, G, 0.0f);
        std::fill_n(dah_all_.data() + (s * T + t) * G, G, 0.0f);
        for (int64_t u = 0; u < H; ++u)
          direct_[s * H + u] = dh_[s * H + u] + (dy && !sh_.sequences ? dy[u] : 0.0f);
        continue;
      }
      for (int64_t u = 0; u < H; ++u) {
        const float dh = dy ? dh_[s * H + u] + dy[u] : dh_[s * H + u];
        float x3[3], h3[3];
        direct_[s * H + u] = GruCellBackward(GruGates{g[u], g[H + u], g[2 * H + u]},
                                             ah[s * G + 2 * H + u], h_prev[s * H + u], dh, x3, h3);
        for (int k = 0; k < 3; ++k) {
          dx[k * H + u] = x3[k];
          dh3[k * H + u] = h3[k];
        }
      }
      std::copy(dh3, dh3 + G, dah_all_.data() + (s * T + t) * G);
    }
    // dW_hh (+)= dah^T h_{t-1}; h_{t-1}'s gradient: dah W_hh plus the direct part.
    Gemm(true, false, G, H, n, dah_.data(), h_prev, d_.w_hh, t != T - 1);
    Gemm(false, false, n, H, G, dah_.data(), p_.w_hh, dh_.data(), false);
    for (int64_t i = 0; i < n * H; ++i) dh_[i] += direct_[i];
  }
  Gemm(true, false, G, sh_.features, n * T, dax_.data(), in, d_.w_ih, false);  // dax^T x
  GruColumnSums(dax_.data(), n * T, G, d_.b_ih);
  GruColumnSums(dah_all_.data(), n * T, G, d_.b_hh);
  if (grad_in) Gemm(false, false, n * T, sh_.features, G, dax_.data(), p_.w_ih, grad_in, false);
}

}  // namespace tributary::cpu
