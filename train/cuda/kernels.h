// Launchers for the CUDA backend's kernels, one family per .cu file. Each launcher queues its
// kernel(s) on `stream` and returns the launch status (cudaGetLastError()), which callers wrap in
// CUDA_CHECK; faults inside a kernel surface at the next synchronization.
//
// Layouts match the CPU reference (train/cpu/): activations NHWC, row-major matrices, per-sample
// indices as int32. Every kernel is deterministic: no atomics, fixed reduction orders, so the same
// inputs give bitwise-identical outputs run to run on the same GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "train/depthwise_math.h"
#include "train/gru_math.h"
#include "train/loss_math.h"
#include "train/lstm_math.h"
#include "train/norm_math.h"

namespace tributary::cuda {

// gather.cu: x[i] = images[idx[i]] (sample_size floats each), y[i] = labels[idx[i]].
cudaError_t LaunchGatherBatch(const float* images, const uint8_t* labels, const uint32_t* idx,
                              int64_t n, int64_t sample_size, float* x, uint8_t* y,
                              cudaStream_t stream);

// Geometry of a stride-1, zero-padded convolution on NHWC input (model_spec.h's ConvTaps: Conv2D's
// square kernel, Conv1D's kernel x 1).
struct ConvGeometry {
  int64_t h, w, c;  // input
  int64_t kh, kw;   // kernel
  int64_t ph, pw;   // padding above and below, left and right
  int64_t oh, ow;   // output (h + 2ph - kh + 1, w + 2pw - kw + 1)
  constexpr int64_t taps() const {
    return kh * kw * c;
  }  // usable in kernels (--expt-relaxed-constexpr)
  // From the spec's ConvTaps (host only).
  static ConvGeometry Of(int64_t h, int64_t w, int64_t c, int64_t kh, int64_t kw, int64_t ph,
                         int64_t pw) {
    return ConvGeometry{h, w, c, kh, kw, ph, pw, h + 2 * ph - kh + 1, w + 2 * pw - kw + 1};
  }
};

// im2col.cu: cols[(s*oh + oy)*ow + ox][(ky*kw + kx)*c + ic] = in[s][oy+ky-ph][ox+kx-pw][ic] (0
// outside).
cudaError_t LaunchIm2Col(const float* in, int64_t n, const ConvGeometry& g, float* cols,
                         cudaStream_t stream);
// im2col.cu: the adjoint, grad_in = sum of every column entry that im2col copied from each input
// element (overwrites grad_in).
cudaError_t LaunchCol2Im(const float* cols, int64_t n, const ConvGeometry& g, float* grad_in,
                         cudaStream_t stream);

// Geometry of a max-pool with window = stride = k (trailing rows/columns that do not fill a window
// are dropped, as in the CPU backend and PyTorch's default).
struct PoolGeometry {
  int64_t h, w, c, k, oh, ow;
};

// maxpool.cu: out = max over each window; argmax[i] = index within the sample's input of the first
// maximum in (ky, kx) order.
cudaError_t LaunchMaxPoolForward(const float* in, int64_t n, const PoolGeometry& g, float* out,
                                 int32_t* argmax, cudaStream_t stream);
// maxpool.cu: grad_in (overwritten) gets grad_out at each window's argmax and 0 elsewhere.
cudaError_t LaunchMaxPoolBackward(const float* grad_out, const int32_t* argmax, int64_t n,
                                  const PoolGeometry& g, float* grad_in, cudaStream_t stream);

// avgpool.cu: the mean of each kh x kw window (stride kh, kw), summed in (ky, kx) order and then
// scaled, as the CPU's AvgPool2D; the backward writes grad_out / (kh kw) over each window and 0
// past the last whole window.
struct AvgPoolGeometry {
  int64_t h, w, c, kh, kw, oh, ow;
};
cudaError_t LaunchAvgPoolForward(const float* in, int64_t n, const AvgPoolGeometry& g, float* out,
                                 cudaStream_t stream);
cudaError_t LaunchAvgPoolBackward(const float* grad_out, int64_t n, const AvgPoolGeometry& g,
                                  float* grad_in, cudaStream_t stream);

// norm.cu: GroupNorm and LayerNorm (train/norm_math.h). The forward writes each (sample, set)'s
// mean and 1/std; the backward overwrites dgamma and dbeta ([c] each) and, unless grad_in is null,
// the input gradient.
cudaError_t LaunchNormForward(const NormGeometry& g, const float* in, int64_t n, const float* gamma,
                              const float* beta, float* out, float* mean, float* rstd,
                              cudaStream_t stream);
cudaError_t LaunchNormBackward(const NormGeometry& g, const float* in, const float* grad_out,
                               int64_t n, const float* gamma, const float* mean, const float* rstd,
                               float* dgamma, float* dbeta, float* grad_in, cudaStream_t stream);

// depthwise.cu: depthwise Conv2D (train/depthwise_math.h), one thread per output value, per input
// gradient value, and per weight or bias gradient (which sums its samples in order). The backward
// overwrites dw ([c, k, k]) and db ([c]) and, unless grad_in is null, the input gradient.
cudaError_t LaunchDepthwiseForward(const DepthwiseGeometry& g, const float* in, int64_t n,
                                   const float* weight, const float* bias, float* out,
                                   cudaStream_t stream);
cudaError_t LaunchDepthwiseBackward(const DepthwiseGeometry& g, const float* in,
                                    const float* grad_out, int64_t n, const float* weight,
                                    float* dw, float* db, float* grad_in, cudaStream_t stream);

// embedding.cu: embedding lookup (train/embedding_math.h) over `positions` token ids (a batch's
// samples times their positions); the backward overwrites dw ([vocab, dim]) and, unless grad_in is
// null, zeroes grad_in (token ids have no gradient).
cudaError_t LaunchEmbeddingForward(const float* ids, int64_t positions, int64_t vocab, int64_t dim,
                                   const float* weight, float* out, cudaStream_t stream);
cudaError_t LaunchEmbeddingBackward(const float* ids, const float* grad_out, int64_t positions,
                                    int64_t vocab, int64_t dim, float* dw, float* grad_in,
                                    cudaStream_t stream);
// Each of n samples' sequence length (SequenceLength of its `positions` ids, pad marking padding)
// into lengths[n].
cudaError_t LaunchSequenceLengths(const float* ids, int64_t n, int64_t positions, float pad,
                                  int32_t* lengths, cudaStream_t stream);

// lstm.cu: one LSTM step (train/lstm_math.h) for n samples; the buffers are the layer's
// (train/cuda/lstm.h). StepInput: z = zx's step-t rows + b_ih + b_hh. StepForward: from z and the
// previous cells, the gates, cells and hidden states of step t (and, for a `sequences` layer, its
// output rows). StepBackward: from the gradient reaching h (dh, plus grad_out's step-t rows) and c
// (dc, updated to c_{t-1}'s), the pre-activations' gradients dz [n, 4 units] and their rows of
// dz_all. With `lengths` (null: every step), a sample's steps t >= its length keep its state
// (c_prev, h_prev), write zero outputs, give zero dz, leave dc, and put the gradient reaching h
// (with the last output's) in `carry`, which LstmCarry writes back to dh after the step's dh GEMM.
cudaError_t LaunchLstmStepInput(const RecurrentShape& sh, int64_t n, int64_t t, const float* zx,
                                const float* b_ih, const float* b_hh, float* z,
                                cudaStream_t stream);
cudaError_t LaunchLstmStepForward(const RecurrentShape& sh, int64_t n, int64_t t, const float* z,
                                  const float* c_prev, const float* h_prev, const int32_t* lengths,
                                  float* gates, float* c_next, float* h_next, float* out,
                                  cudaStream_t stream);
cudaError_t LaunchLstmStepBackward(const RecurrentShape& sh, int64_t n, int64_t t,
                                   const float* gates, const float* c_prev, const float* c_now,
                                   const float* grad_out, const int32_t* lengths, const float* dh,
                                   float* dc, float* dz, float* dz_all, float* carry,
                                   cudaStream_t stream);
cudaError_t LaunchLstmCarry(const RecurrentShape& sh, int64_t n, int64_t t, const int32_t* lengths,
                            const float* carry, float* dh, cudaStream_t stream);

// gru.cu: one GRU step (train/gru_math.h) for n samples; the buffers are the layer's
// (train/cuda/gru.h). StepForward: from ax's step-t rows (x W_ih^T + b_ih) and ah (h W_hh^T +
// b_hh), the gates and hidden states of step t (and a `sequences` layer's output rows).
// StepBackward: from the gradient reaching h (dh, plus grad_out's step-t rows), ax's and ah's
// gradients (dax's step-t rows, dah and its rows of dah_all) and h_{t-1}'s direct part (`direct`).
// With `lengths` (null: every step), a sample's steps t >= its length keep its state, write zero
// outputs and zero gradients, and pass the gradient reaching h (with the last output's) as
// `direct`.
cudaError_t LaunchGruStepForward(const RecurrentShape& sh, int64_t n, int64_t t, const float* ax,
                                 const float* ah, const float* h_prev, const int32_t* lengths,
                                 float* gates, float* h_next, float* out, cudaStream_t stream);
cudaError_t LaunchGruStepBackward(const RecurrentShape& sh, int64_t n, int64_t t,
                                  const float* gates, const float* ah, const float* h_prev,
                                  const float* grad_out, const int32_t* lengths, const float* dh,
                                  float* direct, float* dax, float* dah, float* dah_all,
                                  cudaStream_t stream);

// activations.cu: sigmoid, tanh, GELU elementwise (train/activation_math.h); the backward reads
// the input and the output: grad_in = grad_out * slope(in, out).
cudaError_t LaunchActivationForward(int fn, const float* in, float* out, int64_t count,
                                    cudaStream_t stream);
cudaError_t LaunchActivationBackward(int fn, const float* in, const float* out,
                                     const float* grad_out, float* grad_in, int64_t count,
                                     cudaStream_t stream);

// dropout.cu: dst = src * mask * 1 / (1 - rate) for n samples of `size` values, the mask of
// train/dropout_math.h for `key` (samples counted from the batch's first): Dropout's forward in
// training, and its backward on the gradient.
cudaError_t LaunchDropout(const float* src, float* dst, int64_t size, int64_t n, uint64_t key,
                          float rate, cudaStream_t stream);

// add.cu: out = a + b elementwise (out may be a or b): the residual (add) layer's forward, and
// the engine's accumulation of a residual connection's gradient.
cudaError_t LaunchAdd(const float* a, const float* b, float* out, int64_t count,
                      cudaStream_t stream);

// relu.cu: out = max(in, 0); grad_in = out > 0 ? grad_out : 0.
cudaError_t LaunchReluForward(const float* in, float* out, int64_t count, cudaStream_t stream);
cudaError_t LaunchReluBackward(const float* out, const float* grad_out, float* grad_in,
                               int64_t count, cudaStream_t stream);

// bias.cu: y[r][c] += bias[c] for a row-major [rows, cols] matrix.
cudaError_t LaunchBiasAdd(float* y, const float* bias, int64_t rows, int64_t cols,
                          cudaStream_t stream);
// bias.cu: db[c] = sum over r of dy[r][c], in two deterministic stages; `scratch` holds
// BiasGradScratchSize(rows, cols) floats.
int64_t BiasGradScratchSize(int64_t rows, int64_t cols);
cudaError_t LaunchBiasGrad(const float* dy, int64_t rows, int64_t cols, float* scratch, float* db,
                           cudaStream_t stream);

// softmax_xent.cu: per-sample softmax cross-entropy of logits [n, k] against labels, summed into
// totals (overwritten). When grad is not null it receives d(mean loss)/d(logits), [n, k].
struct LossTotals {
  double loss_sum;
  long long correct;
};
// softmax_xent.cu: the training loss (train/loss_math.h; softmax cross-entropy unless `kind` says
// otherwise).
cudaError_t LaunchSoftmaxXent(const float* logits, const uint8_t* labels, int64_t n, int64_t k,
                              float* grad, LossTotals* totals, cudaStream_t stream,
                              LossKind kind = LossKind::kSoftmaxCrossEntropy);

// sgd.cu: the update of train/sgd.h, elementwise over n parameters. velocity may be null when
// momentum is 0; anchor may be null when mu is 0; correction (SCAFFOLD's, subtracted times lr
// after the step) may be null.
struct SgdParams {
  float lr, momentum, weight_decay, proximal_mu;
};
cudaError_t LaunchSgdUpdate(float* w, const float* grad, float* velocity, const float* anchor,
                            const float* correction, int64_t n, const SgdParams& p,
                            cudaStream_t stream);

// sgd.cu: Adam and AdamW (train/sgd.h's AdamUpdate) at one step, whose bias corrections the host
// computes (AdamFactorsAt). anchor may be null when proximal_mu is 0, correction may be null.
struct AdamParams {
  float lr, proximal_mu, beta1, beta2, eps;
  float l2;         // weight decay added to the gradient (Adam), 0 for AdamW
  float decay;      // 1 - lr * weight_decay for AdamW, 1 for Adam
  float step_size;  // lr / (1 - beta1^t)
  float bc2_sqrt;   // sqrt(1 - beta2^t)
};
cudaError_t LaunchAdamUpdate(float* w, const float* grad, float* m, float* v, const float* anchor,
                             const float* correction, int64_t n, const AdamParams& p,
                             cudaStream_t stream);

}  // namespace tributary::cuda
