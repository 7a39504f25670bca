#include "train/cuda/embedding.h"

#include "train/cuda/cuda_check.h"

namespace tributary::cuda {

Status Embedding::Forward(const float* in, float* out, int64_t n) {
  CUDA_CHECK(LaunchEmbeddingForward(in, n * positions_, vocab_, dim_, w_, out, ctx_.stream()));
  return Status::Ok();
}

Status Embedding::Backward(const float* in, const float*, const float* grad_out, float* grad_in,
                           int64_t n) {
  CUDA_CHECK(LaunchEmbeddingBackward(in, grad_out, n * positions_, vocab_, dim_, dw_, grad_in,
                                     ctx_.stream()));
  return Status::Ok();
}

}  // namespace tributary::cuda
