// The training loss over a batch of outputs (train/loss_math.h: softmax cross-entropy, mean squared
// error or binary cross-entropy): loss sum, correct count and (optionally) the gradient of the
// mean loss, each sample's with the CPU engine's arithmetic.
#include "train/cuda/kernels.h"
#include "train/cuda/launch.cuh"
#include "train/loss_math.h"

namespace tributary::cuda {
namespace {

// A single block: the batch is small (tens to a few thousand samples of ~10 logits), and one block
// can reduce the totals in a fixed order without atomics, so the loss is reproducible bit for bit.
__global__ void SoftmaxXentKernel(const float* __restrict__ logits,
                                  const uint8_t* __restrict__ labels, int64_t n, int64_t k,
                                  LossKind kind, float* __restrict__ grad,
                                  LossTotals* __restrict__ totals) {
  __shared__ double loss_part[kThreads];
  __shared__ long long correct_part[kThreads];
  const float inv_n = 1.0f / static_cast<float>(n);
  double loss = 0.0;
  long long correct = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const int64_t y = labels[i];
    int64_t arg = 0;
    loss += SampleLoss(kind, logits + i * k, k, y, inv_n, grad != nullptr ? grad + i * k : nullptr,
                       &arg);
    correct += (arg == y);
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
                              float* grad, LossTotals* totals, cudaStream_t stream, LossKind kind) {
  TRIB_LAUNCH(SoftmaxXentKernel, 1, kThreads, stream)(logits, labels, n, k, kind, grad, totals);
  return LaunchStatus();
}

}  // namespace tributary::cuda
