// The training losses' arithmetic, one definition for the CPU engine (train/cpu/softmax_xent.cc)
// and the CUDA kernel (train/cuda/softmax_xent.cu), so both give the same gradient bits.
//
// Every loss reads a sample's k outputs z and its class label y (the target is one-hot: t_y = 1,
// the rest 0), and every one predicts argmax z:
//   softmax cross-entropy   log(sum_j e^{z_j}) - z_y                 (nn.CrossEntropyLoss)
//   mean squared error      (1/k) sum_j (z_j - t_j)^2                 (nn.MSELoss on one-hot
//   targets) binary cross-entropy    (1/k) sum_j [max(z_j,0) - z_j t_j + log(1 + e^{-|z_j|})]
//                           on the logits, each output its own sigmoid (nn.BCEWithLogitsLoss on
//                           one-hot targets)
// PyTorch's mean reductions over a batch of N samples are these per-sample values averaged over
// the N samples. Sums are in double; the gradient of the batch mean is written scaled by `scale`
// (1 / the batch's size).
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__) || defined(TRIB_CUDA_HOST_EMULATION)
#define TRIB_LOSS_HD __host__ __device__
#else
#define TRIB_LOSS_HD
#endif

namespace tributary {

enum class LossKind : int {
  kSoftmaxCrossEntropy = 0,
  kMeanSquaredError = 1,
  kBinaryCrossEntropy = 2,
};

// One sample: returns its loss, sets *arg to its prediction and, when g is not null, writes
// d(loss)/dz * scale to g[0..k).
TRIB_LOSS_HD inline double SampleLoss(LossKind kind, const float* z, int64_t k, int64_t y,
                                      float scale, float* g, int64_t* arg) {
  int64_t best = 0;
  float mx = z[0];
  for (int64_t j = 1; j < k; ++j)
    if (z[j] > mx) mx = z[j], best = j;
  *arg = best;
  if (kind == LossKind::kMeanSquaredError) {
    double sum = 0.0;
    for (int64_t j = 0; j < k; ++j) {
      const double d = static_cast<double>(z[j]) - (j == y ? 1.0 : 0.0);
      sum += d * d;
      if (g) g[j] = static_cast<float>(2.0 * d / static_cast<double>(k)) * scale;
    }
    return sum / static_cast<double>(k);
  }
  if (kind == LossKind::kBinaryCrossEntropy) {
    double sum = 0.0;
    for (int64_t j = 0; j < k; ++j) {
      const double v = z[j], t = j == y ? 1.0 : 0.0;
      sum += (v > 0.0 ? v : 0.0) - v * t + ::log1p(::exp(-::fabs(v)));
      if (g) {
        const double p = v >= 0.0 ? 1.0 / (1.0 + ::exp(-v)) : ::exp(v) / (1.0 + ::exp(v));
        g[j] = static_cast<float>((p - t) / static_cast<double>(k)) * scale;
      }
    }
    return sum / static_cast<double>(k);
  }
  double sum = 0.0;
  for (int64_t j = 0; j < k; ++j) sum += ::exp(static_cast<double>(z[j] - mx));
  if (g) {
    const double inv_sum = 1.0 / sum;
    for (int64_t j = 0; j < k; ++j)
      g[j] = static_cast<float>(::exp(static_cast<double>(z[j] - mx)) * inv_sum) * scale;
    g[y] -= scale;
  }
  return ::log(sum) - static_cast<double>(z[y] - mx);
}

}  // namespace tributary
