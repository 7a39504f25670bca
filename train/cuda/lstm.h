// LSTM on the CUDA backend (train/lstm_math.h; the CPU engine's train/cpu/lstm.h describes the
// layer and its parameters): the input projection of every step and each step's recurrence are
// cuBLAS GEMMs, the gates, cells and hidden states the step kernels of lstm.cu, with the CPU's
// arithmetic. Its buffers are allocated once, for max_batch samples.
#pragma once

#include "train/cuda/cuda_layer.h"
#include "train/cuda/device_buffer.h"
#include "train/cuda/kernels.h"

namespace tributary::cuda {

class Lstm final : public CudaLayer {
 public:
  static Result<std::unique_ptr<Lstm>> Create(const RecurrentShape& shape, int64_t max_batch,
                                              const CudaContext& ctx);
  int64_t num_params() const override { return RecurrentParams::Count(4 * sh_.units, sh_); }
  void Bind(float* params, float* grads) override {
    p_ = RecurrentParams::In(params, 4 * sh_.units, sh_);
    d_ = RecurrentParams::In(grads, 4 * sh_.units, sh_);
  }
  // The batch's sequence lengths (a device buffer of the engine's), or null: every step.
  void BeginBatch(bool, uint64_t, const int32_t* lengths) override { lengths_ = lengths; }
  Status Forward(const float* in, float* out, int64_t n) override;
  Status Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                  int64_t n) override;

 private:
  Lstm(const RecurrentShape& shape, const CudaContext& ctx) : sh_(shape), ctx_(ctx) {}
  RecurrentShape sh_;
  const CudaContext& ctx_;
  RecurrentParams p_, d_;  // the parameters and their gradients
  // As the CPU layer's: zx_, dz_all_ [n * steps, 4 units] sample-major; gates_ [steps][n][4 units];
  // cells_, hidden_ [steps + 1][n][units]; z_ [n, 4 units]; dh_, dc_ [n, units].
  DeviceBuffer<float> zx_, dz_all_, gates_, cells_, hidden_, z_, dh_, dc_, bias_scratch_;
  DeviceBuffer<float> carry_;  // [max_batch, units]: dh carried past padded steps
  const int32_t* lengths_ = nullptr;
};

}  // namespace tributary::cuda
