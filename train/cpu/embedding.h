// Embedding on the CPU engine (train/embedding_math.h): each of a sample's `positions` input values
// is a token id whose row of the [vocab, dim] table becomes `dim` output values. No input gradient
// (token ids are not differentiable): Backward writes zeros where one is asked for.
#pragma once

#include "train/cpu/cpu_layer.h"

namespace tributary::cpu {

class Embedding final : public CpuLayer {
 public:
  Embedding(int64_t positions, int64_t vocab, int64_t dim)
      : positions_(positions), vocab_(vocab), dim_(dim) {}
  int64_t num_params() const override { return vocab_ * dim_; }
  void Bind(float* params, float* grads) override {
    w_ = params;
    dw_ = grads;
  }
  void Forward(const float* in, float* out, int64_t n) override;
  void Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                int64_t n) override;

 private:
  int64_t positions_, vocab_, dim_;
  float *w_ = nullptr, *dw_ = nullptr;
};

}  // namespace tributary::cpu
