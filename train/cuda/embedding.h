// Embedding on the CUDA backend (train/embedding_math.h): a [vocab, dim] table looked up by the
// token ids of the input; its kernels (embedding.cu) give the CPU engine's bits. No input gradient:
// Backward zeroes grad_in where one is asked for.
#pragma once

#include "train/cuda/cuda_layer.h"
#include "train/cuda/kernels.h"

namespace tributary::cuda {

class Embedding final : public CudaLayer {
 public:
  Embedding(int64_t positions, int64_t vocab, int64_t dim, const CudaContext& ctx)
      : positions_(positions), vocab_(vocab), dim_(dim), ctx_(ctx) {}
  int64_t num_params() const override { return vocab_ * dim_; }
  void Bind(float* params, float* grads) override {
    w_ = params;
    dw_ = grads;
  }
  Status Forward(const float* in, float* out, int64_t n) override;
  Status Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                  int64_t n) override;

 private:
  int64_t positions_, vocab_, dim_;
  const CudaContext& ctx_;
  float *w_ = nullptr, *dw_ = nullptr;
};

}  // namespace tributary::cuda
