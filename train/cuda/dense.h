// Dense (fully connected) layer on cuBLAS: y = x W^T + b with W [out, in] row-major.
#pragma once

#include "train/cuda/cuda_layer.h"
#include "train/cuda/device_buffer.h"

namespace tributary::cuda {

class Dense final : public CudaLayer {
 public:
  static Result<std::unique_ptr<Dense>> Create(int64_t in, int64_t out, int64_t max_batch,
                                               const CudaContext& ctx);

  int64_t num_params() const override { return out_ * in_ + out_; }
  void Bind(float* params, float* grads) override;
  Status Forward(const float* in, float* out, int64_t n) override;
  Status Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                  int64_t n) override;

 private:
  Dense(int64_t in, int64_t out, const CudaContext& ctx) : in_(in), out_(out), ctx_(ctx) {}

  int64_t in_, out_;
  const CudaContext& ctx_;
  DeviceBuffer<float> bias_scratch_;
  float* w_ = nullptr;
  float* b_ = nullptr;
  float* dw_ = nullptr;
  float* db_ = nullptr;
};

}  // namespace tributary::cuda
