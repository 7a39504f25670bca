// Conv2D and Conv1D (stride 1, zero padding, NHWC, OHWI weight; ConvGeometry) lowered to cuBLAS
// GEMMs through im2col, as train/cpu/conv2d.h does: the columns matrix has a row per output pixel
// and a column per (kh, kw, ic) tap, so the OHWI weight is exactly the [out_channels, taps] matrix.
//
// The batch runs in chunks whose columns fit a fixed budget (256 MiB by default), so the layer's
// memory does not grow with large evaluation batches. When the whole batch is one chunk (the usual
// training case), Backward() reuses the columns Forward() built instead of rebuilding them.
#pragma once

#include "train/cuda/cuda_layer.h"
#include "train/cuda/device_buffer.h"
#include "train/cuda/kernels.h"

namespace tributary::cuda {

class Conv2D final : public CudaLayer {
 public:
  static constexpr int64_t kDefaultColumnsBudget = int64_t{256} << 20;  // bytes

  // columns_budget_bytes bounds the im2col buffer (tests shrink it to exercise chunking).
  static Result<std::unique_ptr<Conv2D>> Create(
      const ConvGeometry& g, int64_t out_c, int64_t max_batch, const CudaContext& ctx,
      int64_t columns_budget_bytes = kDefaultColumnsBudget);

  int64_t num_params() const override { return oc_ * g_.taps() + oc_; }
  void Bind(float* params, float* grads) override;
  Status Forward(const float* in, float* out, int64_t n) override;
  Status Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                  int64_t n) override;

  int64_t chunk() const { return chunk_; }

 private:
  Conv2D(const ConvGeometry& g, int64_t out_c, const CudaContext& ctx)
      : g_(g), oc_(out_c), ctx_(ctx) {}

  ConvGeometry g_;
  int64_t oc_;
  const CudaContext& ctx_;
  int64_t chunk_ = 1;          // samples per chunk
  DeviceBuffer<float> cols_;   // [chunk * oh * ow, taps]
  DeviceBuffer<float> dcols_;  // same shape; allocated on the first Backward that needs it
  DeviceBuffer<float> bias_scratch_;
  const float* cols_of_ = nullptr;  // input whose columns cols_ holds (whole batch in one chunk)
  int64_t cols_n_ = 0;
  float* w_ = nullptr;
  float* b_ = nullptr;
  float* dw_ = nullptr;
  float* db_ = nullptr;
};

}  // namespace tributary::cuda
