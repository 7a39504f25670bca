#include "train/cpu/depthwise_conv2d.h"

#include <algorithm>

namespace tributary::cpu {

// Each loop below runs over the channels innermost (contiguous in NHWC, so it vectorizes) and
// keeps, for every value, train/depthwise_math.h's order of additions: the same bits as
// DepthwiseOutput / DepthwiseInputGrad / DepthwiseWeightGrad / DepthwiseBiasGrad, which the CUDA
// kernels compute (tests/train/cuda/kernel_emulation_test.cc compares them bit for bit).

void DepthwiseConv2D::Bind(float* params, float* grads) {
  w_ = params;
  b_ = params + g_.c * g_.k * g_.k;
  dw_ = grads;
  db_ = grads + g_.c * g_.k * g_.k;
}

void DepthwiseConv2D::TransposeWeights() {
  const int64_t taps = g_.k * g_.k;
  wt_.resize(static_cast<size_t>(taps * g_.c));
  for (int64_t ch = 0; ch < g_.c; ++ch)
    for (int64_t t = 0; t < taps; ++t) wt_[t * g_.c + ch] = w_[ch * taps + t];
}

void DepthwiseConv2D::Forward(const float* in, float* out, int64_t n) {
  TransposeWeights();
  const int64_t oh = g_.oh(), ow = g_.ow(), c = g_.c;
  acc_.resize(static_cast<size_t>(c));
  float* acc = acc_.data();
  for (int64_t s = 0; s < n; ++s) {
    const float* x = in + s * g_.in_size();
    float* y = out + s * g_.out_size();
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        std::fill(acc, acc + c, 0.0f);
        for (int64_t ky = 0; ky < g_.k; ++ky) {
          const int64_t iy = oy + ky - g_.p;
          if (iy < 0 || iy >= g_.h) continue;
          for (int64_t kx = 0; kx < g_.k; ++kx) {
            const int64_t ix = ox + kx - g_.p;
            if (ix < 0 || ix >= g_.w) continue;
            const float* xv = x + (iy * g_.w + ix) * c;
            const float* wv = wt_.data() + (ky * g_.k + kx) * c;
            for (int64_t ch = 0; ch < c; ++ch) acc[ch] += xv[ch] * wv[ch];
          }
        }
        float* yv = y + (oy * ow + ox) * c;
        for (int64_t ch = 0; ch < c; ++ch) yv[ch] = acc[ch] + b_[ch];
      }
  }
}

void DepthwiseConv2D::Backward(const float* in, const float*, const float* grad_out, float* grad_in,
                               int64_t n) {
  TransposeWeights();
  const int64_t taps = g_.k * g_.k, oh = g_.oh(), ow = g_.ow(), c = g_.c;
  acc_.resize(static_cast<size_t>(c));
  float* acc = acc_.data();
  for (int64_t s = 0; s < n; ++s) {
    const float* x = in + s * g_.in_size();
    const float* dy = grad_out + s * g_.out_size();
    // This sample's weight gradient, tap by tap, then its bias gradient.
    for (int64_t t = 0; t < taps; ++t) {
      const int64_t ky = t / g_.k, kx = t % g_.k;
      std::fill(acc, acc + c, 0.0f);
      for (int64_t oy = 0; oy < oh; ++oy) {
        const int64_t iy = oy + ky - g_.p;
        if (iy < 0 || iy >= g_.h) continue;
        for (int64_t ox = 0; ox < ow; ++ox) {
          const int64_t ix = ox + kx - g_.p;
          if (ix < 0 || ix >= g_.w) continue;
          const float* dv = dy + (oy * ow + ox) * c;
          const float* xv = x + (iy * g_.w + ix) * c;
          for (int64_t ch = 0; ch < c; ++ch) acc[ch] += dv[ch] * xv[ch];
        }
      }
      for (int64_t ch = 0; ch < c; ++ch)
        dw_[ch * taps + t] = s == 0 ? acc[ch] : dw_[ch * taps + t] + acc[ch];
    }
    std::fill(acc, acc + c, 0.0f);
    for (int64_t i = 0; i < oh * ow; ++i)
      for (int64_t ch = 0; ch < c; ++ch) acc[ch] += dy[i * c + ch];
    for (int64_t ch = 0; ch < c; ++ch) db_[ch] = s == 0 ? acc[ch] : db_[ch] + acc[ch];
    if (!grad_in) continue;
    float* dx = grad_in + s * g_.in_size();
    for (int64_t iy = 0; iy < g_.h; ++iy)
      for (int64_t ix = 0; ix < g_.w; ++ix) {
        std::fill(acc, acc + c, 0.0f);
        for (int64_t ky = 0; ky < g_.k; ++ky) {
          const int64_t oy = iy + g_.p - ky;
          if (oy < 0 || oy >= oh) continue;
          for (int64_t kx = 0; kx < g_.k; ++kx) {
            const int64_t ox = ix + g_.p - kx;
            if (ox < 0 || ox >= ow) continue;
            const float* dv = dy + (oy * ow + ox) * c;
            const float* wv = wt_.data() + (ky * g_.k + kx) * c;
            for (int64_t ch = 0; ch < c; ++ch) acc[ch] += dv[ch] * wv[ch];
          }
        }
        std::copy(acc, acc + c, dx + (iy * g_.w + ix) * c);
      }
  }
  if (n == 0) {
    std::fill(dw_, dw_ + c * taps, 0.0f);
    std::fill(db_, db_ + c, 0.0f);
  }
}

}  // namespace tributary::cpu
