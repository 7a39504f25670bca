// Dense (fully connected): y = x W^T + b, with W [out, in] row-major (as PyTorch's nn.Linear).
#pragma once

#include "train/cpu/cpu_layer.h"

namespace tributary::cpu {

class Dense final : public CpuLayer {
 public:
  Dense(int64_t in_features, int64_t out_features) : in_(in_features), out_(out_features) {}
  int64_t num_params() const override { return out_ * in_ + out_; }
  void Bind(float* params, float* grads) override;
  void Forward(const float* in, float* out, int64_t n) override;
  void Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                int64_t n) override;

 private:
  int64_t in_, out_;
  float* w_ = nullptr;
  float* b_ = nullptr;
  float* dw_ = nullptr;
  float* db_ = nullptr;
};

}  // namespace tributary::cpu
