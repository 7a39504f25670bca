// Layers without parameters: MaxPool2D (window = stride = k, NHWC), AvgPool2D (also global
// average pooling), ReLU, the smooth activations (sigmoid, tanh, GELU: train/activation_math.h),
// Dropout, Add (a residual connection) and Flatten.
#pragma once

#include <vector>

#include "train/activation_math.h"
#include "train/cpu/cpu_layer.h"

namespace tributary::cpu {

class MaxPool2D final : public CpuLayer {
 public:
  MaxPool2D(int64_t in_h, int64_t in_w, int64_t c, int64_t k, int64_t max_batch);
  void Forward(const float* in, float* out, int64_t n) override;
  void Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                int64_t n) override;

 private:
  int64_t h_, w_, c_, k_, oh_, ow_;
  std::vector<int32_t> argmax_;  // per output element: offset of the max within its sample
};

class ReLU final : public CpuLayer {
 public:
  explicit ReLU(int64_t size) : size_(size) {}
  void Forward(const float* in, float* out, int64_t n) override;
  void Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                int64_t n) override;

 private:
  int64_t size_;
};

// The mean of each kh x kw window, stride (kh, kw), NHWC: AvgPool2D (kh = kw = size) and global
// average pooling (kh = h, kw = w). The backward spreads grad_out / (kh kw) over the window.
class AvgPool2D final : public CpuLayer {
 public:
  AvgPool2D(int64_t in_h, int64_t in_w, int64_t c, int64_t kh, int64_t kw)
      : h_(in_h), w_(in_w), c_(c), kh_(kh), kw_(kw), oh_(in_h / kh), ow_(in_w / kw) {}
  void Forward(const float* in, float* out, int64_t n) override;
  void Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                int64_t n) override;

 private:
  int64_t h_, w_, c_, kh_, kw_, oh_, ow_;
};

// Sigmoid, tanh or GELU, elementwise; its backward reads the input (GELU) or the output.
class Activation final : public CpuLayer {
 public:
  Activation(ActivationFn fn, int64_t size) : fn_(fn), size_(size) {}
  void Forward(const float* in, float* out, int64_t n) override;
  void Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                int64_t n) override;

 private:
  ActivationFn fn_;
  int64_t size_;
};

// Dropout (train/dropout_math.h): in a training batch, zeroes each value whose mask bit drops it
// and scales the others by 1 / (1 - rate); the backward applies the same mask and scale to the
// gradient (the mask is drawn again from the key, not stored). Outside training, a copy.
class Dropout final : public CpuLayer {
 public:
  Dropout(float rate, int64_t size) : rate_(rate), size_(size) {}
  void BeginBatch(bool training, uint64_t key, int64_t first_sample,
                  const int32_t* lengths) override;
  void Forward(const float* in, float* out, int64_t n) override;
  void Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                int64_t n) override;

 private:
  // dst = src * mask * scale (training) or src (otherwise), for n samples.
  void Apply(const float* src, float* dst, int64_t n) const;
  float rate_;
  int64_t size_;
  bool training_ = false;
  uint64_t key_ = 0;
  int64_t first_sample_ = 0;
};

// Add: out = in + source, where source is an earlier layer's output for the same samples, and
// its backward writes grad_in = grad_out and adds grad_out to source_grad (the engine adds that
// buffer into the gradient of the source layer's output when its backward gets there, after
// zeroing it before each backward). Connect() hands it both buffers, per replica.
class Add final : public CpuLayer {
 public:
  explicit Add(int64_t size) : size_(size) {}
  void Connect(const float* source, float* source_grad) {
    source_ = source;
    source_grad_ = source_grad;
  }
  void Forward(const float* in, float* out, int64_t n) override;
  void Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                int64_t n) override;

 private:
  int64_t size_;
  const float* source_ = nullptr;
  float* source_grad_ = nullptr;
};

// NHWC activations are already laid out as the flat vector the next Dense layer reads.
class Flatten final : public CpuLayer {
 public:
  bool is_identity() const override { return true; }
  void Forward(const float*, float*, int64_t) override {}
  void Backward(const float*, const float*, const float*, float*, int64_t) override {}
};

}  // namespace tributary::cpu
