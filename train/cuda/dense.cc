#include "train/cuda/dense.h"

#include "train/cuda/gemm.h"
#include "train/cuda/kernels.h"

namespace tributary::cuda {

Result<std::unique_ptr<Dense>> Dense::Create(int64_t in, int64_t out, int64_t max_batch,
                                             const CudaContext& ctx) {
  std::unique_ptr<Dense> d(new Dense(in, out, ctx));
  TRIB_RETURN_IF_ERROR(
      d->bias_scratch_.Allocate(static_cast<size_t>(BiasGradScratchSize(max_batch, out))));
  return d;
}

void Dense::Bind(float* params, float* grads) {
  w_ = params;
  b_ = params + out_ * in_;
  dw_ = grads;
  db_ = grads + out_ * in_;
}

Status Dense::Forward(const float* in, float* out, int64_t n) {
  // y[n, out] = x[n, in] * W[out, in]^T, then + b per row.
  TRIB_RETURN_IF_ERROR(GemmRowMajor(ctx_.cublas(), false, true, n, out_, in_, 1.0f, in, in_, w_,
                                    in_, 0.0f, out, out_));
  CUDA_CHECK(LaunchBiasAdd(out, b_, n, out_, ctx_.stream()));
  return Status::Ok();
}

Status Dense::Backward(const float* in, const float*, const float* grad_out, float* grad_in,
                       int64_t n) {
  // dW[out, in] = dy^T * x;  db = column sums of dy;  dx[n, in] = dy * W.
  TRIB_RETURN_IF_ERROR(GemmRowMajor(ctx_.cublas(), true, false, out_, in_, n, 1.0f, grad_out, out_,
                                    in, in_, 0.0f, dw_, in_));
  CUDA_CHECK(LaunchBiasGrad(grad_out, n, out_, bias_scratch_.data(), db_, ctx_.stream()));
  if (grad_in != nullptr)
    TRIB_RETURN_IF_ERROR(GemmRowMajor(ctx_.cublas(), false, false, n, in_, out_, 1.0f, grad_out,
                                      out_, w_, in_, 0.0f, grad_in, in_));
  return Status::Ok();
}

}  // namespace tributary::cuda
