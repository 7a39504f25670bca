// GRU on the CUDA backend (train/gru_math.h; the CPU engine's train/cpu/gru.h describes the layer
// and its parameters): the input projection of every step and each step's recurrence are cuBLAS
// GEMMs with the biases added by kernel, the gates and hidden states the step kernels of gru.cu,
// with the CPU's arithmetic. Its buffers are allocated once, for max_batch samples.
#pragma once

#include "train/cuda/cuda_layer.h"
#include "train/cuda/device_buffer.h"
#include "train/cuda/kernels.h"

namespace tributary::cuda {

class Gru final : public CudaLayer {
 public:
  static Result<std::unique_ptr<Gru>> Create(const RecurrentShape& shape, int64_t max_batch,
                                             const CudaContext& ctx);
  int64_t num_params() const override { return RecurrentParams::Count(3 * sh_.units, sh_); }
  void Bind(float* params, float* grads) override {
    p_ = RecurrentParams::In(params, 3 * sh_.units, sh_);
    d_ = RecurrentParams::In(grads, 3 * sh_.units, sh_);
  }
  // The batch's sequence lengths (a device buffer of the engine's), or null: every step.
  void BeginBatch(bool, uint64_t, const int32_t* lengths) override { lengths_ = lengths; }
  Status Forward(const float* in, float* out, int64_t n) override;
  Status Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                  int64_t n) override;

 private:
  Gru(const RecurrentShape& shape, const CudaContext& ctx) : sh_(shape), ctx_(ctx) {}
  RecurrentShape sh_;
  const CudaContext& ctx_;
  RecurrentParams p_, d_;  // the parameters and their gradients
  // As the CPU layer's buffers (train/cpu/gru.h).
  DeviceBuffer<float> ax_, dax_, dah_all_, ah_, gates_, hidden_, dah_, dh_, direct_, bias_scratch_;
  const int32_t* lengths_ = nullptr;
};

}  // namespace tributary::cuda
