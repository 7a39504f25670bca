// GroupNorm's and LayerNorm's arithmetic (Wu & He, ECCV 2018; Ba, Kiros & Hinton, 2016), one
// definition for the CPU engine (train/cpu/norm.cc) and the CUDA kernels (train/cuda/norm.cu), so
// the two backends give the same bits for the same order of work.
//
// A sample's h x w x c activations (NHWC) fall into normalization sets: LayerNorm (per_position)
// normalizes each position's c channels, as PyTorch's nn.LayerNorm(c) over the last dimension;
// GroupNorm normalizes each group of c / groups channels over all h x w positions, as
// nn.GroupNorm(groups, c). Each set's mean and biased variance are summed in double; then
//   y = (x - mean) * rstd * gamma[ch] + beta[ch],   rstd = 1 / sqrt(var + eps), eps = 1e-5,
// with gamma and beta per channel. The backward is the standard one:
//   dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)),   dxhat = dy * gamma[ch],
//   dgamma[ch] = sum dy * xhat,   dbeta[ch] = sum dy   (over samples, then positions).
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__) || defined(TRIB_CUDA_HOST_EMULATION)
#define TRIB_NORM_HD __host__ __device__
#else
#define TRIB_NORM_HD
#endif

namespace tributary {

inline constexpr float kNormEps = 1e-5f;

struct NormGeometry {
  int64_t positions = 1;  // h * w
  int64_t c = 1;
  int64_t groups = 1;         // GroupNorm's; 1 for LayerNorm
  bool per_position = false;  // LayerNorm

  TRIB_NORM_HD int64_t sets() const { return per_position ? positions : groups; }
  TRIB_NORM_HD int64_t set_size() const { return per_position ? c : positions * (c / groups); }
  // The k-th element of `set`: its offset within the sample and its channel.
  TRIB_NORM_HD int64_t Offset(int64_t set, int64_t k, int64_t* ch) const {
    if (per_position) {
      *ch = k;
      return set * c + k;
    }
    const int64_t cpg = c / groups;
    *ch = set * cpg + k % cpg;
    return (k / cpg) * c + *ch;
  }
  // The set holding (position p, channel ch).
  TRIB_NORM_HD int64_t SetOf(int64_t p, int64_t ch) const {
    return per_position ? p : ch / (c / groups);
  }
};

// Calls fn(offset, channel) for each element of `set`, in Offset's order (k = 0, 1, ...), with no
// division per element: the loops below are what the backends spend their time in.
template <typename Fn>
TRIB_NORM_HD inline void ForEachInSet(const NormGeometry& g, int64_t set, Fn&& fn) {
  if (g.per_position) {
    for (int64_t ch = 0; ch < g.c; ++ch) fn(set * g.c + ch, ch);
    return;
  }
  const int64_t cpg = g.c / g.groups, c0 = set * cpg;
  for (int64_t p = 0, base = c0; p < g.positions; ++p, base += g.c)
    for (int64_t j = 0; j < cpg; ++j) fn(base + j, c0 + j);
}

// One set of one sample: its statistics, then its normalized, scaled and shifted outputs.
TRIB_NORM_HD inline void NormForwardSet(const NormGeometry& g, const float* x, float* y,
                                        const float* gamma, const float* beta, int64_t set,
                                        float* mean_out, float* rstd_out) {
  const int64_t n = g.set_size();
  double sum = 0.0;
  ForEachInSet(g, set, [&](int64_t i, int64_t) { sum += x[i]; });
  const double mean = sum / static_cast<double>(n);
  double sq = 0.0;
  ForEachInSet(g, set, [&](int64_t i, int64_t) {
    const double d = x[i] - mean;
    sq += d * d;
  });
  const float m = static_cast<float>(mean);
  const float rstd =
      static_cast<float>(1.0 / ::sqrt(sq / static_cast<double>(n) + double{kNormEps}));
  ForEachInSet(g, set,
               [&](int64_t i, int64_t ch) { y[i] = (x[i] - m) * rstd * gamma[ch] + beta[ch]; });
  *mean_out = m;
  *rstd_out = rstd;
}

// The input gradient of one set of one sample.
TRIB_NORM_HD inline void NormBackwardSet(const NormGeometry& g, const float* x, const float* dy,
                                         float* dx, const float* gamma, int64_t set, float mean,
                                         float rstd) {
  const int64_t n = g.set_size();
  double a = 0.0, b = 0.0;
  ForEachInSet(g, set, [&](int64_t i, int64_t ch) {
    const double dxhat = static_cast<double>(dy[i]) * gamma[ch];
    a += dxhat;
    b += dxhat * ((x[i] - mean) * rstd);
  });
  const float ma = static_cast<float>(a / static_cast<double>(n));
  const float mb = static_cast<float>(b / static_cast<double>(n));
  ForEachInSet(g, set, [&](int64_t i, int64_t ch) {
    const float xhat = (x[i] - mean) * rstd;
    dx[i] = rstd * (dy[i] * gamma[ch] - ma - xhat * mb);
  });
}

// Channel ch's parameter gradients over `count` samples of sample_size values (sample after
// sample), with each (sample, set)'s statistics at stats[s * sets + set].
TRIB_NORM_HD inline void NormParamGrad(const NormGeometry& g, const float* x, const float* dy,
                                       int64_t count, int64_t ch, const float* mean,
                                       const float* rstd, float* dgamma, float* dbeta) {
  const int64_t size = g.positions * g.c, sets = g.sets();
  const int64_t group = g.per_position ? 0 : g.SetOf(0, ch);  // GroupNorm: ch's set everywhere
  float dga = 0.0f, dbe = 0.0f;
  for (int64_t s = 0; s < count; ++s)
    for (int64_t p = 0; p < g.positions; ++p) {
      const int64_t i = s * size + p * g.c + ch;
      const int64_t st = s * sets + (g.per_position ? p : group);
      dga += dy[i] * ((x[i] - mean[st]) * rstd[st]);
      dbe += dy[i];
    }
  *dgamma = dga;
  *dbeta = dbe;
}

}  // namespace tributary
