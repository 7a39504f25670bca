// CudaLayer: one layer of the CUDA backend; the GPU twin of cpu::CpuLayer (train/cpu/cpu_layer.h),
// with the same contract and the same math.
//
// A layer transforms a batch of n samples held in device memory (NHWC, n * per-sample size
// floats). Parameters and their gradients live in the engine's flat device buffers; Bind() hands
// the layer its slice (weight then bias, as ParameterLayout() lays them out). Forward() and
// Backward() queue work on the context's stream and return at once; a Status reports a failed
// launch or cuBLAS call (faults inside kernels surface at the engine's next synchronization).
// Backward() overwrites the parameter gradients and, when grad_in is not null, writes the input
// gradient; it must follow a Forward() of the same batch. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>

#include "train/cuda/cuda_context.h"
#include "train/model_spec.h"
#include "tributary/result.h"

namespace tributary::cuda {

class CudaLayer {
 public:
  virtual ~CudaLayer() = default;
  virtual int64_t num_params() const { return 0; }
  virtual void Bind(float* /*params*/, float* /*grads*/) {}
  // True for layers whose output is their input, byte for byte (Flatten): the engine aliases them.
  virtual bool is_identity() const { return false; }
  // Before each batch's Forward: whether it is a training step, the layer's dropout key for this
  // step (train/dropout_math.h) and the batch's sequence lengths (a device buffer; null when the
  // model has none, ModelSpec's SequencePositions). Dropout and the recurrent layers use it.
  virtual void BeginBatch(bool training, uint64_t key, const int32_t* lengths) {
    (void)training;
    (void)key;
    (void)lengths;
  }
  virtual Status Forward(const float* in, float* out, int64_t n) = 0;
  virtual Status Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                          int64_t n) = 0;
};

// Builds the layer for `spec` with per-sample input shape `in`, allocating its device scratch for
// batches of up to max_batch. The context must outlive the layer.
Result<std::unique_ptr<CudaLayer>> MakeCudaLayer(const LayerSpec& spec, const Shape3& in,
                                                 int64_t max_batch, const CudaContext& ctx);

}  // namespace tributary::cuda
