#include "train/cuda/conv2d.h"

#include <algorithm>

#include "train/cuda/gemm.h"

namespace tributary::cuda {
Result<std::unique_ptr<Conv2D>> Conv2D::Create(const ConvGeometry& g, int64_t out_c,
                                               int64_t max_batch, const CudaContext& ctx,
                                               int64_t columns_budget_bytes) {
  std::unique_ptr<Conv2D> conv(new Conv2D(g, out_c, ctx));
  const int64_t per_sample = g.oh * g.ow * g.taps() * static_cast<int64_t>(sizeof(float));
  conv->chunk_ =
      std::clamp<int64_t>(columns_budget_bytes / std::max<int64_t>(per_sample, 1), 1, max_batch);
  TRIB_RETURN_IF_ERROR(
      conv->cols_.Allocate(static_cast<size_t>(conv->chunk_ * g.oh * g.ow * g.taps())));
  TRIB_RETURN_IF_ERROR(conv->bias_scratch_.Allocate(
      static_cast<size_t>(BiasGradScratchSize(max_batch * g.oh * g.ow, out_c))));
  return conv;
}

void Conv2D::Bind(float* params, float* grads) {
  w_ = params;
  b_ = params + oc_ * g_.taps();
  dw_ = grads;
  db_ = grads + oc_ * g_.taps();
}

Status Conv2D::Forward(const float* in, float* out, int64_t n) {
  const int64_t in_size = g_.h * g_.w * g_.c, pix = g_.oh * g_.ow, taps = g_.taps();
  for (int64_t s = 0; s < n; s += chunk_) {
    const int64_t m = std::min(chunk_, n - s);
    CUDA_CHECK(LaunchIm2Col(in + s * in_size, m, g_, cols_.data(), ctx_.stream()));
    // y[m*pix, oc] = cols[m*pix, taps] * W[oc, taps]^T
    float* y = out + s * pix * oc_;
    TRIB_RETURN_IF_ERROR(GemmRowMajor(ctx_.cublas(), false, true, m * pix, oc_, taps, 1.0f,
                                      cols_.data(), taps, w_, taps, 0.0f, y, oc_));
    CUDA_CHECK(LaunchBiasAdd(y, b_, m * pix, oc_, ctx_.stream()));
  }
  cols_of_ = n <= chunk_ ? in : nullptr;
  cols_n_ = n;
  return Status::Ok();
}

Status Conv2D::Backward(const float* in, const float*, const float* grad_out, float* grad_in,
                        int64_t n) {
  const int64_t in_size = g_.h * g_.w * g_.c, pix = g_.oh * g_.ow, taps = g_.taps();
  if (grad_in != nullptr && dcols_.size() < cols_.size())
    TRIB_RETURN_IF_ERROR(dcols_.Allocate(cols_.size()));
  const bool have_cols = (cols_of_ == in && cols_n_ == n && n <= chunk_);
  for (int64_t s = 0; s < n; s += chunk_) {
    const int64_t m = std::min(chunk_, n - s);
    if (!have_cols) CUDA_CHECK(LaunchIm2Col(in + s * in_size, m, g_, cols_.data(), ctx_.stream()));
    const float* dy = grad_out + s * pix * oc_;
    // dW[oc, taps] (+)= dy[m*pix, oc]^T * cols[m*pix, taps]; the first chunk overwrites.
    TRIB_RETURN_IF_ERROR(GemmRowMajor(ctx_.cublas(), true, false, oc_, taps, m * pix, 1.0f, dy, oc_,
                                      cols_.data(), taps, s == 0 ? 0.0f : 1.0f, dw_, taps));
    if (grad_in != nullptr) {
      // dcols[m*pix, taps] = dy[m*pix, oc] * W[oc, taps], then folded back onto the input.
      TRIB_RETURN_IF_ERROR(GemmRowMajor(ctx_.cublas(), false, false, m * pix, taps, oc_, 1.0f, dy,
                                        oc_, w_, taps, 0.0f, dcols_.data(), taps));
      CUDA_CHECK(LaunchCol2Im(dcols_.data(), m, g_, grad_in + s * in_size, ctx_.stream()));
    }
  }
  CUDA_CHECK(LaunchBiasGrad(grad_out, n * pix, oc_, bias_scratch_.data(), db_, ctx_.stream()));
  return Status::Ok();
}

}  // namespace tributary::cuda
