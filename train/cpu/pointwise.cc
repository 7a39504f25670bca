#include "train/cpu/pointwise.h"

#include <cstring>

#include "core/simd.h"
#include "train/dropout_math.h"

namespace tributary::cpu {
namespace {

// The ReLU loops, dispatched (core/simd.h); selects only, so every copy gives the same bits.
TRIB_SIMD_CLONES void ReluForward(const float* __restrict in, float* __restrict out, int64_t len) {
  for (int64_t i = 0; i < len; ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
}

TRIB_SIMD_CLONES void ReluBackward(const float* __restrict out, const float* __restrict grad_out,
                                   float* __restrict grad_in, int64_t len) {
  for (int64_t i = 0; i < len; ++i) grad_in[i] = out[i] > 0.0f ? grad_out[i] : 0.0f;
}

// One sample's k x k max pooling (stride k, NHWC): each output the first largest value of its
// window in window order (a strictly larger value replaces it) and that value's offset. Selects
// only, no branch on the data (mispredicted branches cost more than the comparisons here), so the
// channel loop vectorizes and every copy gives the same values and offsets.
TRIB_SIMD_CLONES void MaxPoolSample(const float* __restrict img, float* __restrict o,
                                    int32_t* __restrict am, int64_t w, int64_t c, int64_t k,
                                    int64_t oh, int64_t ow) {
  for (int64_t oy = 0; oy < oh; ++oy) {
    for (int64_t ox = 0; ox < ow; ++ox) {
      float* __restrict ov = o + (oy * ow + ox) * c;
      int32_t* __restrict av = am + (oy * ow + ox) * c;
      const auto first = static_cast<int32_t>(((oy * k) * w + ox * k) * c);
      for (int64_t ch = 0; ch < c; ++ch) {
        ov[ch] = img[first + ch];
        av[ch] = first + static_cast<int32_t>(ch);
      }
      for (int64_t ky = 0; ky < k; ++ky) {
        for (int64_t kx = 0; kx < k; ++kx) {
          if (ky == 0 && kx == 0) continue;
          const auto base = static_cast<int32_t>(((oy * k + ky) * w + ox * k + kx) * c);
          for (int64_t ch = 0; ch < c; ++ch) {
            const float v = img[base + ch];
            const bool larger = v > ov[ch];
            ov[ch] = larger ? v : ov[ch];
            av[ch] = larger ? base + static_cast<int32_t>(ch) : av[ch];
          }
        }
      }
    }
  }
}

// The 2 x 2 windows of most models: each output's four candidates are compared in registers, in
// window order, and stored once (the general loop above keeps the running maximum in memory
// across a window's positions). The same selections, so the same values and offsets.
TRIB_SIMD_CLONES void MaxPool2x2Sample(const float* __restrict img, float* __restrict o,
                                       int32_t* __restrict am, int64_t w, int64_t c, int64_t oh,
                                       int64_t ow) {
  const auto row = static_cast<int32_t>(w * c), pixel = static_cast<int32_t>(c);
  for (int64_t oy = 0; oy < oh; ++oy) {
    for (int64_t ox = 0; ox < ow; ++ox) {
      float* __restrict ov = o + (oy * ow + ox) * c;
      int32_t* __restrict av = am + (oy * ow + ox) * c;
      const auto b00 = static_cast<int32_t>((2 * oy * w + 2 * ox) * c);
      for (int32_t ch = 0; ch < pixel; ++ch) {
        const int32_t i00 = b00 + ch, i01 = i00 + pixel, i10 = i00 + row, i11 = i10 + pixel;
        float best = img[i00];
        int32_t at = i00;
        const float v01 = img[i01], v10 = img[i10], v11 = img[i11];
        at = v01 > best ? i01 : at;
        best = v01 > best ? v01 : best;
        at = v10 > best ? i10 : at;
        best = v10 > best ? v10 : best;
        at = v11 > best ? i11 : at;
        best = v11 > best ? v11 : best;
        ov[ch] = best;
        av[ch] = at;
      }
    }
  }
}

}  // namespace

MaxPool2D::MaxPool2D(int64_t in_h, int64_t in_w, int64_t c, int64_t k, int64_t max_batch)
    : h_(in_h), w_(in_w), c_(c), k_(k), oh_(in_h / k), ow_(in_w / k) {
  argmax_.resize(static_cast<size_t>(max_batch * oh_ * ow_ * c_));
}

void MaxPool2D::Forward(const float* in, float* out, int64_t n) {
  const int64_t in_size = h_ * w_ * c_, out_size = oh_ * ow_ * c_;
  for (int64_t s = 0; s < n; ++s) {
    if (k_ == 2)
      MaxPool2x2Sample(in + s * in_size, out + s * out_size, argmax_.data() + s * out_size, w_, c_,
                       oh_, ow_);
    else
      MaxPoolSample(in + s * in_size, out + s * out_size, argmax_.data() + s * out_size, w_, c_, k_,
                    oh_, ow_);
  }
}

void MaxPool2D::Backward(const float*, const float*, const float* grad_out, float* grad_in,
                         int64_t n) {
  if (!grad_in) return;
  const int64_t in_size = h_ * w_ * c_, out_size = oh_ * ow_ * c_;
  std::memset(grad_in, 0, sizeof(float) * n * in_size);
  for (int64_t s = 0; s < n; ++s) {
    float* gi = grad_in + s * in_size;
    const float* go = grad_out + s * out_size;
    const int32_t* am = argmax_.data() + s * out_size;
    for (int64_t i = 0; i < out_size; ++i) gi[am[i]] += go[i];
  }
}

void ReLU::Forward(const float* in, float* out, int64_t n) { ReluForward(in, out, n * size_); }

void ReLU::Backward(const float*, const float* out, const float* grad_out, float* grad_in,
                    int64_t n) {
  if (!grad_in) return;
  ReluBackward(out, grad_out, grad_in, n * size_);
}

void AvgPool2D::Forward(const float* in, float* out, int64_t n) {
  const int64_t in_size = h_ * w_ * c_, out_size = oh_ * ow_ * c_;
  const float scale = 1.0f / static_cast<float>(kh_ * kw_);
  for (int64_t s = 0; s < n; ++s) {
    const float* img = in + s * in_size;
    float* o = out + s * out_size;
    for (int64_t oy = 0; oy < oh_; ++oy) {
      for (int64_t ox = 0; ox < ow_; ++ox) {
        float* ov = o + (oy * ow_ + ox) * c_;
        for (int64_t ch = 0; ch < c_; ++ch) ov[ch] = 0.0f;
        // Summed in (ky, kx) order, then scaled: the CUDA kernel sums in the same order.
        for (int64_t ky = 0; ky < kh_; ++ky)
          for (int64_t kx = 0; kx < kw_; ++kx) {
            const float* iv = img + ((oy * kh_ + ky) * w_ + ox * kw_ + kx) * c_;
            for (int64_t ch = 0; ch < c_; ++ch) ov[ch] += iv[ch];
          }
        for (int64_t ch = 0; ch < c_; ++ch) ov[ch] *= scale;
      }
    }
  }
}

void AvgPool2D::Backward(const float*, const float*, const float* grad_out, float* grad_in,
                         int64_t n) {
  if (!grad_in) return;
  const int64_t in_size = h_ * w_ * c_, out_size = oh_ * ow_ * c_;
  const float scale = 1.0f / static_cast<float>(kh_ * kw_);
  // Rows and columns past the last whole window (h % kh, w % kw) get no gradient.
  std::memset(grad_in, 0, sizeof(float) * n * in_size);
  for (int64_t s = 0; s < n; ++s) {
    float* gi = grad_in + s * in_size;
    const float* go = grad_out + s * out_size;
    for (int64_t oy = 0; oy < oh_; ++oy)
      for (int64_t ox = 0; ox < ow_; ++ox) {
        const float* gv = go + (oy * ow_ + ox) * c_;
        for (int64_t ky = 0; ky < kh_; ++ky)
          for (int64_t kx = 0; kx < kw_; ++kx) {
            float* iv = gi + ((oy * kh_ + ky) * w_ + ox * kw_ + kx) * c_;
            for (int64_t ch = 0; ch < c_; ++ch) iv[ch] = gv[ch] * scale;
          }
      }
  }
}

void Activation::Forward(const float* in, float* out, int64_t n) {
  const int64_t len = n * size_;
  for (int64_t i = 0; i < len; ++i) out[i] = ActivationForward(fn_, in[i]);
}

void Activation::Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                          int64_t n) {
  if (!grad_in) return;
  const int64_t len = n * size_;
  for (int64_t i = 0; i < len; ++i) grad_in[i] = grad_out[i] * ActivationSlope(fn_, in[i], out[i]);
}

void Dropout::BeginBatch(bool training, uint64_t key, int64_t first_sample,
                         const int32_t* /*lengths*/) {
  training_ = training && rate_ > 0.0f;
  key_ = key;
  first_sample_ = first_sample;
}

void Dropout::Apply(const float* src, float* dst, int64_t n) const {
  if (!training_) {
    std::memcpy(dst, src, sizeof(float) * static_cast<size_t>(n * size_));
    return;
  }
  const uint32_t threshold = DropoutThreshold(rate_);
  const float scale = DropoutScale(rate_);
  for (int64_t s = 0; s < n; ++s) {
    const auto sample = static_cast<uint64_t>(first_sample_ + s);
    const float* x = src + s * size_;
    float* y = dst + s * size_;
    for (int64_t e = 0; e < size_; ++e)
      y[e] = DropoutBits(key_, sample, static_cast<uint64_t>(e)) >= threshold ? x[e] * scale : 0.0f;
  }
}

void Dropout::Forward(const float* in, float* out, int64_t n) { Apply(in, out, n); }

void Dropout::Backward(const float* /*in*/, const float* /*out*/, const float* grad_out,
                       float* grad_in, int64_t n) {
  if (grad_in) Apply(grad_out, grad_in, n);
}

void Add::Forward(const float* in, float* out, int64_t n) {
  const int64_t len = n * size_;
  for (int64_t i = 0; i < len; ++i) out[i] = in[i] + source_[i];
}

void Add::Backward(const float* /*in*/, const float* /*out*/, const float* grad_out, float* grad_in,
                   int64_t n) {
  const int64_t len = n * size_;
  if (grad_in) std::memcpy(grad_in, grad_out, sizeof(float) * static_cast<size_t>(len));
  for (int64_t i = 0; i < len; ++i) source_grad_[i] += grad_out[i];
}

}  // namespace tributary::cpu
