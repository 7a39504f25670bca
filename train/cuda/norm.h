// GroupNorm and LayerNorm on the CUDA backend (train/norm_math.h): parameters gamma [c] then
// beta [c]; Forward keeps each (sample, set)'s mean and 1/std on the device for the Backward of
// the same batch.
#pragma once

#include "train/cuda/cuda_layer.h"
#include "train/cuda/device_buffer.h"
#include "train/cuda/kernels.h"

namespace tributary::cuda {

class Norm final : public CudaLayer {
 public:
  static Result<std::unique_ptr<Norm>> Create(const NormGeometry& g, int64_t max_batch,
                                              const CudaContext& ctx);
  int64_t num_params() const override { return 2 * g_.c; }
  void Bind(float* params, float* grads) override;
  Status Forward(const float* in, float* out, int64_t n) override;
  Status Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                  int64_t n) override;

 private:
  Norm(const NormGeometry& g, const CudaContext& ctx) : g_(g), ctx_(ctx) {}
  NormGeometry g_;
  const CudaContext& ctx_;
  DeviceBuffer<float> mean_, rstd_;  // [max_batch * sets]
  float *gamma_ = nullptr, *beta_ = nullptr, *dgamma_ = nullptr, *dbeta_ = nullptr;
};

}  // namespace tributary::cuda
