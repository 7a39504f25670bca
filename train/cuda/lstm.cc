#include "train/cuda/lstm.h"

#include "train/cuda/cuda_check.h"
#include "train/cuda/gemm.h"

namespace tributary::cuda {

Result<std::unique_ptr<Lstm>> Lstm::Create(const RecurrentShape& shape, int64_t max_batch,
                                           const CudaContext& ctx) {
  std::unique_ptr<Lstm> l(new Lstm(shape, ctx));
  const auto n = static_cast<size_t>(max_batch), T = static_cast<size_t>(shape.steps),
             H = static_cast<size_t>(shape.units), G = 4 * H;
  TRIB_RETURN_IF_ERROR(l->zx_.Allocate(n * T * G));
  TRIB_RETURN_IF_ERROR(l->dz_all_.Allocate(n * T * G));
  TRIB_RETURN_IF_ERROR(l->gates_.Allocate(T * n * G));
  TRIB_RETURN_IF_ERROR(l->cells_.Allocate((T + 1) * n * H));
  TRIB_RETURN_IF_ERROR(l->hidden_.Allocate((T + 1) * n * H));
  TRIB_RETURN_IF_ERROR(l->z_.Allocate(n * G));
  TRIB_RETURN_IF_ERROR(l->dh_.Allocate(n * H));
  TRIB_RETURN_IF_ERROR(l->dc_.Allocate(n * H));
  TRIB_RETURN_IF_ERROR(l->carry_.Allocate(n * H));
  TRIB_RETURN_IF_ERROR(l->bias_scratch_.Allocate(
      static_cast<size_t>(BiasGradScratchSize(max_batch * shape.steps, 4 * shape.units))));
  return l;
}

Status Lstm::Forward(const float* in, float* out, int64_t n) {
  const int64_t T = sh_.steps, H = sh_.units, G = 4 * H, F = sh_.features;
  const cudaStream_t stream = ctx_.stream();
  // Step 0's state is zero.
  CUDA_CHECK(cudaMemsetAsync(cells_.data(), 0, static_cast<size_t>(n * H) * sizeof(float), stream));
  CUDA_CHECK(
      cudaMemsetAsync(hidden_.data(), 0, static_cast<size_t>(n * H) * sizeof(float), stream));
  // zx[n * T, G] = x[n * T, F] W_ih^T.
  TRIB_RETURN_IF_ERROR(GemmRowMajor(ctx_.cublas(), false, true, n * T, G, F, 1.0f, in, F, p_.w_ih,
                                    F, 0.0f, zx_.data(), G));
  for (int64_t t = 0; t < T; ++t) {
    CUDA_CHECK(LaunchLstmStepInput(sh_, n, t, zx_.data(), p_.b_ih, p_.b_hh, z_.data(), stream));
    // z += h_{t-1} W_hh^T.
    TRIB_RETURN_IF_ERROR(GemmRowMajor(ctx_.cublas(), false, true, n, G, H, 1.0f,
                                      hidden_.data() + t * n * H, H, p_.w_hh, H, 1.0f, z_.data(),
                                      G));
    CUDA_CHECK(LaunchLstmStepForward(sh_, n, t, z_.data(), cells_.data() + t * n * H,
                                     hidden_.data() + t * n * H, lengths_,
                                     gates_.data() + t * n * G, cells_.data() + (t + 1) * n * H,
                                     hidden_.data() + (t + 1) * n * H, out, stream));
  }
  if (!sh_.sequences)
    CUDA_CHECK(cudaMemcpyAsync(out, hidden_.data() + T * n * H,
                               static_cast<size_t>(n * H) * sizeof(float), cudaMemcpyDeviceToDevice,
                               stream));
  return Status::Ok();
}

Status Lstm::Backward(const float* in, const float*, const float* grad_out, float* grad_in,
                      int64_t n) {
  const int64_t T = sh_.steps, H = sh_.units, G = 4 * H, F = sh_.features;
  const cudaStream_t stream = ctx_.stream();
  CUDA_CHECK(cudaMemsetAsync(dh_.data(), 0, static_cast<size_t>(n * H) * sizeof(float), stream));
  CUDA_CHECK(cudaMemsetAsync(dc_.data(), 0, static_cast<size_t>(n * H) * sizeof(float), stream));
  for (int64_t t = T - 1; t >= 0; --t) {
    CUDA_CHECK(LaunchLstmStepBackward(sh_, n, t, gates_.data() + t * n * G,
                                      cells_.data() + t * n * H, cells_.data() + (t + 1) * n * H,
                                      grad_out, lengths_, dh_.data(), dc_.data(), z_.data(),
                                      dz_all_.data(), carry_.data(), stream));
    // dW_hh (+)= dz^T h_{t-1}; the gradient reaching h_{t-1}: dz W_hh.
    TRIB_RETURN_IF_ERROR(GemmRowMajor(ctx_.cublas(), true, false, G, H, n, 1.0f, z_.data(), G,
                                      hidden_.data() + t * n * H, H, t == T - 1 ? 0.0f : 1.0f,
                                      d_.w_hh, H));
    TRIB_RETURN_IF_ERROR(GemmRowMajor(ctx_.cublas(), false, false, n, H, G, 1.0f, z_.data(), G,
                                      p_.w_hh, H, 0.0f, dh_.data(), H));
    if (lengths_ != nullptr)
      CUDA_CHECK(LaunchLstmCarry(sh_, n, t, lengths_, carry_.data(), dh_.data(), stream));
  }
  TRIB_RETURN_IF_ERROR(GemmRowMajor(ctx_.cublas(), true, false, G, F, n * T, 1.0f, dz_all_.data(),
                                    G, in, F, 0.0f, d_.w_ih, F));
  CUDA_CHECK(LaunchBiasGrad(dz_all_.data(), n * T, G, bias_scratch_.data(), d_.b_ih, stream));
  CUDA_CHECK(cudaMemcpyAsync(d_.b_hh, d_.b_ih, static_cast<size_t>(G) * sizeof(float),
                             cudaMemcpyDeviceToDevice, stream));
  if (grad_in != nullptr)
    TRIB_RETURN_IF_ERROR(GemmRowMajor(ctx_.cublas(), false, false, n * T, F, G, 1.0f,
                                      dz_all_.data(), G, p_.w_ih, F, 0.0f, grad_in, F));
  return Status::Ok();
}

}  // namespace tributary::cuda
