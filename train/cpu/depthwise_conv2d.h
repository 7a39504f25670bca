// Depthwise Conv2D on the CPU engine (train/depthwise_math.h: stride 1, zero padding, a k x k
// kernel per channel, weight [c, k, k] then bias [c]). Its loops run over the channels innermost
// (they vectorize) and keep the shared arithmetic's order of additions for every value, so the
// CUDA engine's kernels give the same bits.
#pragma once

#include <vector>

#include "train/cpu/cpu_layer.h"
#include "train/depthwise_math.h"

namespace tributary::cpu {

class DepthwiseConv2D final : public CpuLayer {
 public:
  explicit DepthwiseConv2D(const DepthwiseGeometry& g) : g_(g) {}
  int64_t num_params() const override { return g_.c * g_.k * g_.k + g_.c; }
  void Bind(float* params, float* grads) override;
  void Forward(const float* in, float* out, int64_t n) override;
  void Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                int64_t n) override;

 private:
  void TransposeWeights();  // wt_ = the weight as [k * k, c]
  DepthwiseGeometry g_;
  float *w_ = nullptr, *b_ = nullptr, *dw_ = nullptr, *db_ = nullptr;
  std::vector<float> wt_, acc_;
};

}  // namespace tributary::cpu
