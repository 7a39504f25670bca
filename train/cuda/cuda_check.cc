#include "train/cuda/cuda_check.h"

#include <string>

namespace tributary::cuda {
namespace {

std::string Where(const char* statement, const char* file, int line) {
  return std::string(" in `") + statement + "` at " + file + ":" + std::to_string(line);
}

}  // namespace

Status CudaErrorStatus(cudaError_t err, const char* statement, const char* file, int line) {
  // Clears the sticky "last error" of a non-fatal error, so the next launch check does not report
  // it again; a fatal (context-corrupting) error stays, and every later call reports it.
  (void)cudaGetLastError();
  std::string msg = std::string("CUDA error ") + cudaGetErrorName(err) + " (" +
                    cudaGetErrorString(err) + ")" + Where(statement, file, line);
  switch (err) {
    case cudaErrorMemoryAllocation:
      return Status::ResourceExhausted(std::move(msg));
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorStubLibrary:
    case cudaErrorDevicesUnavailable:
    case cudaErrorInvalidDevice:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
      return Status::Unavailable(std::move(msg));
    default:
      return Status::Internal(std::move(msg));
  }
}

Status CublasErrorStatus(cublasStatus_t err, const char* statement, const char* file, int line) {
  std::string msg = std::string("cuBLAS error ") + cublasGetStatusName(err) + " (" +
                    cublasGetStatusString(err) + ")" + Where(statement, file, line);
  switch (err) {
    case CUBLAS_STATUS_ALLOC_FAILED:
      return Status::ResourceExhausted(std::move(msg));
    case CUBLAS_STATUS_NOT_INITIALIZED:
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return Status::Unavailable(std::move(msg));
    default:
      return Status::Internal(std::move(msg));
  }
}

}  // namespace tributary::cuda
