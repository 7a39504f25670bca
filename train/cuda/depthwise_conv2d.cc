#include "train/cuda/depthwise_conv2d.h"

#include "train/cuda/cuda_check.h"

namespace tributary::cuda {

void DepthwiseConv2D::Bind(float* params, float* grads) {
  w_ = params;
  b_ = params + g_.c * g_.k * g_.k;
  dw_ = grads;
  db_ = grads + g_.c * g_.k * g_.k;
}

Status DepthwiseConv2D::Forward(const float* in, float* out, int64_t n) {
  CUDA_CHECK(LaunchDepthwiseForward(g_, in, n, w_, b_, out, ctx_.stream()));
  return Status::Ok();
}

Status DepthwiseConv2D::Backward(const float* in, const float*, const float* grad_out,
                                 float* grad_in, int64_t n) {
  CUDA_CHECK(LaunchDepthwiseBackward(g_, in, grad_out, n, w_, dw_, db_, grad_in, ctx_.stream()));
  return Status::Ok();
}

}  // namespace tributary::cuda
