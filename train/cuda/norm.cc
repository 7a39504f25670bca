#include "train/cuda/norm.h"

namespace tributary::cuda {

Result<std::unique_ptr<Norm>> Norm::Create(const NormGeometry& g, int64_t max_batch,
                                           const CudaContext& ctx) {
  std::unique_ptr<Norm> norm(new Norm(g, ctx));
  const auto n = static_cast<size_t>(max_batch * g.sets());
  TRIB_RETURN_IF_ERROR(norm->mean_.Allocate(n));
  TRIB_RETURN_IF_ERROR(norm->rstd_.Allocate(n));
  return norm;
}

void Norm::Bind(float* params, float* grads) {
  gamma_ = params;
  beta_ = params + g_.c;
  dgamma_ = grads;
  dbeta_ = grads + g_.c;
}

Status Norm::Forward(const float* in, float* out, int64_t n) {
  CUDA_CHECK(
      LaunchNormForward(g_, in, n, gamma_, beta_, out, mean_.data(), rstd_.data(), ctx_.stream()));
  return Status::Ok();
}

Status Norm::Backward(const float* in, const float*, const float* grad_out, float* grad_in,
                      int64_t n) {
  CUDA_CHECK(LaunchNormBackward(g_, in, grad_out, n, gamma_, mean_.data(), rstd_.data(), dgamma_,
                                dbeta_, grad_in, ctx_.stream()));
  return Status::Ok();
}

}  // namespace tributary::cuda
