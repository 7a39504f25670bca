#include "train/cuda/pointwise.h"

namespace tributary::cuda {

Result<std::unique_ptr<MaxPool2D>> MaxPool2D::Create(const PoolGeometry& g, int64_t max_batch,
                                                     const CudaContext& ctx) {
  std::unique_ptr<MaxPool2D> pool(new MaxPool2D(g, ctx));
  TRIB_RETURN_IF_ERROR(pool->argmax_.Allocate(static_cast<size_t>(max_batch * g.oh * g.ow * g.c)));
  return pool;
}

Status MaxPool2D::Forward(const float* in, float* out, int64_t n) {
  CUDA_CHECK(LaunchMaxPoolForward(in, n, g_, out, argmax_.data(), ctx_.stream()));
  return Status::Ok();
}

Status MaxPool2D::Backward(const float*, const float*, const float* grad_out, float* grad_in,
                           int64_t n) {
  if (grad_in == nullptr) return Status::Ok();
  CUDA_CHECK(LaunchMaxPoolBackward(grad_out, argmax_.data(), n, g_, grad_in, ctx_.stream()));
  return Status::Ok();
}

Status ReLU::Forward(const float* in, float* out, int64_t n) {
  CUDA_CHECK(LaunchReluForward(in, out, n * size_, ctx_.stream()));
  return Status::Ok();
}

Status ReLU::Backward(const float*, const float* out, const float* grad_out, float* grad_in,
                      int64_t n) {
  if (grad_in == nullptr) return Status::Ok();
  CUDA_CHECK(LaunchReluBackward(out, grad_out, grad_in, n * size_, ctx_.stream()));
  return Status::Ok();
}

Status AvgPool2D::Forward(const float* in, float* out, int64_t n) {
  CUDA_CHECK(LaunchAvgPoolForward(in, n, g_, out, ctx_.stream()));
  return Status::Ok();
}

Status AvgPool2D::Backward(const float*, const float*, const float* grad_out, float* grad_in,
                           int64_t n) {
  if (grad_in == nullptr) return Status::Ok();
  CUDA_CHECK(LaunchAvgPoolBackward(grad_out, n, g_, grad_in, ctx_.stream()));
  return Status::Ok();
}

Status Activation::Forward(const float* in, float* out, int64_t n) {
  CUDA_CHECK(LaunchActivationForward(static_cast<int>(fn_), in, out, n * size_, ctx_.stream()));
  return Status::Ok();
}

Status Activation::Backward(const float* in, const float* out, const float* grad_out,
                            float* grad_in, int64_t n) {
  if (grad_in == nullptr) return Status::Ok();
  CUDA_CHECK(LaunchActivationBackward(static_cast<int>(fn_), in, out, grad_out, grad_in, n * size_,
                                      ctx_.stream()));
  return Status::Ok();
}

Status Dropout::Apply(const float* src, float* dst, int64_t n) {
  if (training_) {
    CUDA_CHECK(LaunchDropout(src, dst, size_, n, key_, rate_, ctx_.stream()));
  } else {
    CUDA_CHECK(cudaMemcpyAsync(dst, src, sizeof(float) * static_cast<size_t>(n * size_),
                               cudaMemcpyDeviceToDevice, ctx_.stream()));
  }
  return Status::Ok();
}

Status Dropout::Forward(const float* in, float* out, int64_t n) { return Apply(in, out, n); }

Status Dropout::Backward(const float*, const float*, const float* grad_out, float* grad_in,
                         int64_t n) {
  if (grad_in == nullptr) return Status::Ok();
  return Apply(grad_out, grad_in, n);
}

Status Add::Forward(const float* in, float* out, int64_t n) {
  CUDA_CHECK(LaunchAdd(in, source_, out, n * size_, ctx_.stream()));
  return Status::Ok();
}

Status Add::Backward(const float*, const float*, const float* grad_out, float* grad_in, int64_t n) {
  const auto count = static_cast<size_t>(n * size_);
  if (grad_in != nullptr)
    CUDA_CHECK(cudaMemcpyAsync(grad_in, grad_out, sizeof(float) * count, cudaMemcpyDeviceToDevice,
                               ctx_.stream()));
  CUDA_CHECK(LaunchAdd(source_grad_, grad_out, source_grad_, n * size_, ctx_.stream()));
  return Status::Ok();
}

}  // namespace tributary::cuda
