// Depthwise Conv2D on the CPU engine (train/depthwise_math.h: stride 1, zero padding, a k x k
// kernel per channel, weight [c, k, k] then bias [c]). Each value is computed by the shared
// arithmetic, so the CUDA engine's kernels give the same bits.
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
  DepthwiseGeometry g_;
  float *w_ = nullptr, *b_ = nullptr, *dw_ = nullptr, *db_ = nullptr;
};

}  // namespace tributary::cpu
