#include "train/cuda/cuda_context.h"

#include "train/cuda/cuda_api.h"
#include "train/cuda/cuda_check.h"

namespace tributary::cuda {

Result<std::unique_ptr<CudaContext>> CudaContext::Create(int device_index) {
  const CudaInfo& info = QueryCuda();
  if (!info.available())
    return Status::Unavailable("CUDA is unavailable: " + info.unavailable_reason);
  if (device_index < 0 || device_index >= info.device_count)
    return Status::InvalidArgument(
        "CUDA device " + std::to_string(device_index) + " does not exist; this machine has " +
        std::to_string(info.device_count) +
        " (cuda:0 to cuda:" + std::to_string(info.device_count - 1) + ")");
  std::unique_ptr<CudaContext> ctx(new CudaContext());
  ctx->device_ = device_index;
  ctx->name_ = info.device_names[static_cast<size_t>(device_index)];
  TRIB_RETURN_IF_ERROR(ctx->Activate());
  CUDA_CHECK(cudaStreamCreateWithFlags(&ctx->stream_, cudaStreamNonBlocking));
  CUBLAS_CHECK(cublasCreate(&ctx->cublas_));
  CUBLAS_CHECK(cublasSetStream(ctx->cublas_, ctx->stream_));
  // Plain FP32 arithmetic (no TF32 tensor cores): the backend must match the CPU reference to an
  // NMSE of 1e-5 and stay reproducible run to run.
  CUBLAS_CHECK(cublasSetMathMode(ctx->cublas_, CUBLAS_DEFAULT_MATH));
  return ctx;
}

CudaContext::~CudaContext() {
  // Errors are ignored: a destructor has no one to report to, and a lost device has nothing to
  // free.
  (void)cudaSetDevice(device_);
  if (cublas_ != nullptr) (void)cublasDestroy(cublas_);
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

Status CudaContext::Activate() const {
  CUDA_CHECK(cudaSetDevice(device_));
  return Status::Ok();
}

Status CudaContext::Synchronize() const {
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  return Status::Ok();
}

}  // namespace tributary::cuda
