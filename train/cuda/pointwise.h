// The parameter-free layers of the CUDA backend: MaxPool2D (window = stride = k), ReLU, the smooth
// activations (sigmoid, tanh, GELU), Flatten.
#pragma once

#include "train/activation_math.h"
#include "train/cuda/cuda_layer.h"
#include "train/cuda/device_buffer.h"
#include "train/cuda/kernels.h"

namespace tributary::cuda {

class MaxPool2D final : public CudaLayer {
 public:
  static Result<std::unique_ptr<MaxPool2D>> Create(const PoolGeometry& g, int64_t max_batch,
                                                   const CudaContext& ctx);
  Status Forward(const float* in, float* out, int64_t n) override;
  Status Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                  int64_t n) override;

 private:
  MaxPool2D(const PoolGeometry& g, const CudaContext& ctx) : g_(g), ctx_(ctx) {}
  PoolGeometry g_;
  const CudaContext& ctx_;
  DeviceBuffer<int32_t> argmax_;  // [max_batch * oh * ow * c], per-sample input index
};

class ReLU final : public CudaLayer {
 public:
  ReLU(int64_t size, const CudaContext& ctx) : size_(size), ctx_(ctx) {}
  Status Forward(const float* in, float* out, int64_t n) override;
  Status Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                  int64_t n) override;

 private:
  int64_t size_;
  const CudaContext& ctx_;
};

// Average pooling over kh x kw windows (global: the whole plane).
class AvgPool2D final : public CudaLayer {
 public:
  AvgPool2D(const AvgPoolGeometry& g, const CudaContext& ctx) : g_(g), ctx_(ctx) {}
  Status Forward(const float* in, float* out, int64_t n) override;
  Status Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                  int64_t n) override;

 private:
  AvgPoolGeometry g_;
  const CudaContext& ctx_;
};

// Sigmoid, tanh or GELU (train/activation_math.h), elementwise.
class Activation final : public CudaLayer {
 public:
  Activation(ActivationFn fn, int64_t size, const CudaContext& ctx)
      : fn_(fn), size_(size), ctx_(ctx) {}
  Status Forward(const float* in, float* out, int64_t n) override;
  Status Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                  int64_t n) override;

 private:
  ActivationFn fn_;
  int64_t size_;
  const CudaContext& ctx_;
};

// Dropout (train/dropout_math.h): the CPU engine's mask and scale in a training batch; outside
// training, a copy.
class Dropout final : public CudaLayer {
 public:
  Dropout(float rate, int64_t size, const CudaContext& ctx) : rate_(rate), size_(size), ctx_(ctx) {}
  void BeginBatch(bool training, uint64_t key, const int32_t* /*lengths*/) override {
    training_ = training && rate_ > 0.0f;
    key_ = key;
  }
  Status Forward(const float* in, float* out, int64_t n) override;
  Status Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                  int64_t n) override;

 private:
  Status Apply(const float* src, float* dst, int64_t n);
  float rate_;
  int64_t size_;
  const CudaContext& ctx_;
  bool training_ = false;
  uint64_t key_ = 0;
};

// Add (a residual connection): out = in + source (an earlier layer's output); the backward writes
// grad_in = grad_out and adds grad_out to source_grad, which the engine zeroes before each
// backward and adds into the source layer's output gradient (train/cpu/pointwise.h's Add).
class Add final : public CudaLayer {
 public:
  Add(int64_t size, const CudaContext& ctx) : size_(size), ctx_(ctx) {}
  void Connect(const float* source, float* source_grad) {
    source_ = source;
    source_grad_ = source_grad;
  }
  Status Forward(const float* in, float* out, int64_t n) override;
  Status Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                  int64_t n) override;

 private:
  int64_t size_;
  const CudaContext& ctx_;
  const float* source_ = nullptr;
  float* source_grad_ = nullptr;
};

class Flatten final : public CudaLayer {
 public:
  bool is_identity() const override { return true; }
  Status Forward(const float*, float*, int64_t) override { return Status::Ok(); }
  Status Backward(const float*, const float*, const float*, float*, int64_t) override {
    return Status::Ok();
  }
};

}  // namespace tributary::cuda
