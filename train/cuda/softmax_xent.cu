// Softmax cross-entropy over a batch of logits: loss sum, correct count and (optionally) the
// gradient of the mean loss. Mirrors train/cpu/softmax_xent.cc, in double where it uses double.
#include "train/cuda/kernels.h"
#include "train/cuda/launch.cuh"

namespace tributary::cuda {
namespace {

// A single block: the batch is small (tens to a few thousand samples of ~10 logits), and one block
// can reduce the totals in a fixed order without atomics, so the loss is reproducible bit for bit.
__global__ void SoftmaxXentKernel(const float* __restrict__ logits,
                                  const uint8_t* __restrict__ labels, int64_t n, int64_t k,
                                  float* __restrict__ grad, LossTotals* __restrict__ totals) {
  __shared__ double loss_part[kThreads];
  __shared__ long long correct_part[kThreads];
  const float inv_n = 1.0f / static_cast<float>(n);
  double loss = 0.0;
  long long correct = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float* z = logits + i * k;
    const int64_t y = labels[i];
    int64_t arg = 0;
    float mx = z[0];
    for (int64_t j = 1; j < k; ++j)
      if (z[j] > mx) mx = z[j], arg = j;
    double sum = 0.0;
    for (int64_t j = 0; j < k; ++j) sum += exp(static_cast<double>(z[j] - mx));
    loss += log(sum) - static_cast<double>(z[y] - mx);
    correct += (arg == y);
    if (grad != nullptr) {
      float* g = grad + i * k;
      const double inv_sum = 1.0 / sum;
      for (int64_t j = 0; j < k; ++j)
        g[j] = static_cast<float>(exp(static_cast<double>(z[j] - mx)) * inv_sum) * inv_n;
      g[y] -= inv_n;
    }
  }
  loss_part[threadIdx.x] = loss;
  correct_part[threadIdx.x] = correct;
  __syncthreads();
  for (unsigned stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      loss_part[threadIdx.x] += loss_part[threadIdx.x + stride];
      correct_part[threadIdx.x] += correct_part[threadIdx.x + stride];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    totals->loss_sum = loss_part[0];
    totals->correct = correct_part[0];
  }
}

}  // namespace

cudaError_t LaunchSoftmaxXent(const float* logits, const uint8_t* labels, int64_t n, int64_t k,
                              float* grad, LossTotals* totals, cudaStream_t stream) {
  TRIB_LAUNCH(SoftmaxXentKernel, 1, kThreads, stream)(logits, labels, n, k, grad, totals);
  return LaunchStatus();
}

}  // namespace tributary::cuda
