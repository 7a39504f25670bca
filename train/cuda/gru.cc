#include "train/cuda/gru.h"

#include "train/cuda/cuda_check.h"
#include "train/cuda/gemm.h"

namespace tributary::cuda {

Result<std::unique_ptr<Gru>> Gru::Create(const RecurrentShape& shape, int64_t max_batch,
                                         const CudaContext& ctx) {
  std::unique_ptr<Gru> l(new Gru(shape, ctx));
  const auto n = static_cast<size_t>(max_batch), T = static_cast<size_t>(shape.steps),
             H = static_cast<size_t>(shape.units), G = 3 * H;
  for (DeviceBuffer<float>* b : {&l->ax_, &l->dax_, &l->dah_all_, &l->ah_, &l->gates_})
    TRIB_RETURN_IF_ERROR(b->Allocate(n * T * G));
  TRIB_RETURN_IF_ERROR(l->hidden_.Allocate((T + 1) * n * H));
  TRIB_RETURN_IF_ERROR(l->dah_.Allocate(n * G));
  TRIB_RETURN_IF_ERROR(l->dh_.Allocate(n * H));
  TRIB_RETURN_IF_ERROR(l->direct_.Allocate(n * H));
  TRIB_RETURN_IF_ERROR(l->bias_scratch_.Allocate(
      static_cast<size_t>(BiasGradScratchSize(max_batch * shape.steps, 3 * shape.units))));
  return l;
}

Status Gru::Forward(const float* in, float* out, int64_t n) {
  const int64_t T = sh_.steps, H = sh_.units, G = 3 * H, F = sh_.features;
  const cudaStream_t stream = ctx_.stream();
  CUDA_CHECK(
      cudaMemsetAsync(hidden_.data(), 0, static_cast<size_t>(n * H) * sizeof(float), stream));
  TRIB_RETURN_IF_ERROR(GemmRowMajor(ctx_.cublas(), false, true, n * T, G, F, 1.0f, in, F, p_.w_ih,
                                    F, 0.0f, ax_.data(), G));
  CUDA_CHECK(LaunchBiasAdd(ax_.data(), p_.b_ih, n * T, G, stream));
  for (int64_t t = 0; t < T; ++t) {
    float* ah = ah_.data() + t * n * G;
    TRIB_RETURN_IF_ERROR(GemmRowMajor(ctx_.cublas(), false, true, n, G, H, 1.0f,
                                      hidden_.data() + t * n * H, H, p_.w_hh, H, 0.0f, ah, G));
    CUDA_CHECK(LaunchBiasAdd(ah, p_.b_hh, n, G, stream));
    CUDA_CHECK(LaunchGruStepForward(sh_, n, t, ax_.data(), ah, hidden_.data() + t * n * H, lengths_,
                                    gates_.data() + t * n * G, hidden_.data() + (t + 1) * n * H,
                                    out, stream));
  }
  if (!sh_.sequences)
    CUDA_CHECK(cudaMemcpyAsync(out, hidden_.data() + T * n * H,
                               static_cast<size_t>(n * H) * sizeof(float), cudaMemcpyDeviceToDevice,
                               stream));
  return Status::Ok();
}

Status Gru::Backward(const float* in, const float*, const float* grad_out, float* grad_in,
                     int64_t n) {
  const int64_t T = sh_.steps, H = sh_.units, G = 3 * H, F = sh_.features;
  const cudaStream_t stream = ctx_.stream();
  const size_t state_bytes = static_cast<size_t>(n * H) * sizeof(float);
  CUDA_CHECK(cudaMemsetAsync(dh_.data(), 0, state_bytes, stream));
  for (int64_t t = T - 1; t >= 0; --t) {
    const float* h_prev = hidden_.data() + t * n * H;
    CUDA_CHECK(LaunchGruStepBackward(sh_, n, t, gates_.data() + t * n * G, ah_.data() + t * n * G,
                                     h_prev, grad_out, lengths_, dh_.data(), direct_.data(),
                                     dax_.data(), dah_.data(), dah_all_.data(), stream));
    // dW_hh (+)= dah^T h_{t-1}; h_{t-1}'s gradient: the direct part + dah W_hh.
    TRIB_RETURN_IF_ERROR(GemmRowMajor(ctx_.cublas(), true, false, G, H, n, 1.0f, dah_.data(), G,
                                      h_prev, H, t == T - 1 ? 0.0f : 1.0f, d_.w_hh, H));
    CUDA_CHECK(
        cudaMemcpyAsync(dh_.data(), direct_.data(), state_bytes, cudaMemcpyDeviceToDevice, stream));
    TRIB_RETURN_IF_ERROR(GemmRowMajor(ctx_.cublas(), false, false, n, H, G, 1.0f, dah_.data(), G,
                                      p_.w_hh, H, 1.0f, dh_.data(), H));
  }
  TRIB_RETURN_IF_ERROR(GemmRowMajor(ctx_.cublas(), true, false, G, F, n * T, 1.0f, dax_.data(), G,
                                    in, F, 0.0f, d_.w_ih, F));
  CUDA_CHECK(LaunchBiasGrad(dax_.data(), n * T, G, bias_scratch_.data(), d_.b_ih, stream));
  CUDA_CHECK(LaunchBiasGrad(dah_all_.data(), n * T, G, bias_scratch_.data(), d_.b_hh, stream));
  if (grad_in != nullptr)
    TRIB_RETURN_IF_ERROR(GemmRowMajor(ctx_.cublas(), false, false, n * T, F, G, 1.0f, dax_.data(),
                                      G, p_.w_ih, F, 0.0f, grad_in, F));
  return Status::Ok();
}

}  // namespace tributary::cuda
