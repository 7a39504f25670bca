// A stride-1 convolution with zero padding (ConvTaps: kh x kw taps, ph/pw padding; Conv2D's square
// kernel and Conv1D's k x 1 along the rows alike), NHWC activations, OHWI weights.
//
// Lowered to GEMMs through im2col: the columns matrix has a row per output pixel and a column per
// (kh, kw, ic) tap, so each row is gathered from contiguous runs of the input and the OHWI weight
// is exactly the [out_channels, taps] matrix. The batch is processed in chunks of samples whose
// columns fit in cache (about 1.5 MiB); Backward() rebuilds a chunk's columns rather than keeping
// the whole batch's, which is faster (the copy hits cache, the GEMMs stay large enough) and keeps
// the layer's memory independent of the batch size.
//
// Narrow layers (at most kDirectMaxChannels output channels, rows of several pixels: LeNet's 1 -> 6
// and 6 -> 16) instead run the forward pass and the filter gradient with the direct kernels
// (direct_conv.h), which read the zero-padded input in place; their input gradient stays a GEMM
// and col2im. Conv1D's "same" convolutions with 3 or 5 taps (winograd.h) run all three passes as
// Winograd's F(4, r): transforms around a GEMMs of two fifths to a half of im2col's work. Which one
// a layer takes depends only on its shape.
#pragma once

#include <vector>

#include "train/cpu/cpu_layer.h"
#include "train/cpu/direct_conv.h"
#include "train/cpu/winograd.h"
#include "train/model_spec.h"

namespace tributary::cpu {

class Conv2D final : public CpuLayer {
 public:
  Conv2D(const ConvTaps& g, int64_t out_c, int64_t max_batch);
  // A square kernel with the same padding on every side.
  Conv2D(int64_t in_h, int64_t in_w, int64_t in_c, int64_t out_c, int64_t kernel, int64_t padding,
         int64_t max_batch)
      : Conv2D(ConvTaps{in_h, in_w, in_c, kernel, kernel, padding, padding}, out_c, max_batch) {}
  int64_t num_params() const override { return out_c_ * taps_ + out_c_; }
  void Bind(float* params, float* grads) override;
  void Forward(const float* in, float* out, int64_t n) override;
  void Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                int64_t n) override;

  static constexpr int64_t kDirectMaxChannels = 16;
  static bool UsesDirectKernels(const ConvTaps& g, int64_t out_c);
  bool direct() const { return direct_; }
  // A Conv1D (w = 1, a k x 1 kernel) with "same" padding and 3 or 5 taps.
  static bool UsesWinograd(const ConvTaps& g);
  bool winograd() const { return wino_ != nullptr; }

 private:
  void DirectForward(const float* in, float* out, int64_t n);
  void DirectFilterGrad(const float* in, const float* grad_out, int64_t n);
  const float* PaddedInput(const float* in) const { return padded_.empty() ? in : padded_.data(); }
  void WinogradForward(const float* in, float* out, int64_t n);
  void WinogradBackward(const float* in, const float* grad_out, float* grad_in, int64_t n);
  // Grows the transformed input's blocks to hold a batch of n samples.
  void ReserveWinogradBlocks(int64_t n);
  // The transformed input's block for the chunk that starts at sample s.
  float* WinogradBlock(int64_t s) {
    return wv_.data() + s / chunk_ * wino_->a * chunk_ * tiles_ * c_;
  }
  void Im2Col(const float* in, int64_t n);
  void Col2Im(const float* cols, float* grad_in, int64_t n) const;
  int64_t chunk_ = 1;  // samples per chunk

  int64_t h_, w_, c_, oc_, kh_, kw_, ph_, pw_, oh_, ow_, taps_;
  AlignedVector cols_;   // [chunk * oh * ow, taps]
  AlignedVector dcols_;  // same shape, for the input gradient
  // The direct kernels' state: the zero-padded copy of the last Forward's input (when one is made),
  // the packed weights and filter gradient ([taps][ocp]) and the filter gradient's scratch.
  bool direct_ = false;
  DirectConvShape shape_;
  AlignedVector padded_, packed_, packed_grad_, dy_scratch_;
  // Winograd's state: the transformed weights (a planes), the transformed input of the last
  // Forward's batch (a block of a planes of [chunk * tiles][c] per chunk: about twice the input's
  // size, kept for the filter gradient), a chunk's products and transformed output gradient, and
  // the filter gradient's a planes of [oc][c].
  const WinogradMatrices* wino_ = nullptr;
  int64_t tiles_ = 0, transformed_batch_ = 0;
  AlignedVector wu_, wv_, wz_, wm_, wd_;
  float* wt_ = nullptr;
  float* b_ = nullptr;
  float* dwt_ = nullptr;
  float* db_ = nullptr;
  int64_t out_c_;
};

}  // namespace tributary::cpu
