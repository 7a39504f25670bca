// Depthwise Conv2D on the CUDA backend (train/depthwise_math.h): weight [c, k, k] then bias [c];
// its kernels (depthwise.cu) give the CPU engine's bits.
#pragma once

#include "train/cuda/cuda_layer.h"
#include "train/cuda/kernels.h"

namespace tributary::cuda {

class DepthwiseConv2D final : public CudaLayer {
 public:
  DepthwiseConv2D(const DepthwiseGeometry& g, const CudaContext& ctx) : g_(g), ctx_(ctx) {}
  int64_t num_params() const override { return g_.c * g_.k * g_.k + g_.c; }
  void Bind(float* params, float* grads) override;
  Status Forward(const float* in, float* out, int64_t n) override;
  Status Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                  int64_t n) override;

 private:
  DepthwiseGeometry g_;
  const CudaContext& ctx_;
  float *w_ = nullptr, *b_ = nullptr, *dw_ = nullptr, *db_ = nullptr;
};

}  // namespace tributary::cuda
