#include "train/cpu/depthwise_conv2d.h"

namespace tributary::cpu {

void DepthwiseConv2D::Bind(float* params, float* grads) {
  w_ = params;
  b_ = params + g_.c * g_.k * g_.k;
  dw_ = grads;
  db_ = grads + g_.c * g_.k * g_.k;
}

void DepthwiseConv2D::Forward(const float* in, float* out, int64_t n) {
  const int64_t oh = g_.oh(), ow = g_.ow();
  for (int64_t s = 0; s < n; ++s) {
    const float* x = in + s * g_.in_size();
    float* y = out + s * g_.out_size();
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox)
        for (int64_t ch = 0; ch < g_.c; ++ch)
          y[(oy * ow + ox) * g_.c + ch] = DepthwiseOutput(g_, x, w_, b_, oy, ox, ch);
  }
}

void DepthwiseConv2D::Backward(const float* in, const float*, const float* grad_out, float* grad_in,
                               int64_t n) {
  const int64_t taps = g_.k * g_.k;
  for (int64_t s = 0; s < n; ++s) {
    const float* x = in + s * g_.in_size();
    const float* dy = grad_out + s * g_.out_size();
    for (int64_t ch = 0; ch < g_.c; ++ch) {
      for (int64_t t = 0; t < taps; ++t) {
        const float v = DepthwiseWeightGrad(g_, x, dy, t / g_.k, t % g_.k, ch);
        dw_[ch * taps + t] = s == 0 ? v : dw_[ch * taps + t] + v;
      }
      const float v = DepthwiseBiasGrad(g_, dy, ch);
      db_[ch] = s == 0 ? v : db_[ch] + v;
    }
    if (!grad_in) continue;
    float* dx = grad_in + s * g_.in_size();
    for (int64_t iy = 0; iy < g_.h; ++iy)
      for (int64_t ix = 0; ix < g_.w; ++ix)
        for (int64_t ch = 0; ch < g_.c; ++ch)
          dx[(iy * g_.w + ix) * g_.c + ch] = DepthwiseInputGrad(g_, dy, w_, iy, ix, ch);
  }
  if (n == 0) {
    for (int64_t i = 0; i < g_.c * taps; ++i) dw_[i] = 0.0f;
    for (int64_t ch = 0; ch < g_.c; ++ch) db_[ch] = 0.0f;
  }
}

}  // namespace tributary::cpu
