// CUDA_CHECK and CUBLAS_CHECK: turn a failed CUDA runtime or cuBLAS call into a Status that names
// the statement, its error and file:line, and return it from the enclosing function (which must
// return Status or Result<T>). The CUDA backend never aborts on a CUDA error: a missing device, an
// old driver or an out-of-memory reaches the Engine boundary as a Status.
//
// Private to train/cuda/ (includes CUDA headers; public headers must not).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "tributary/status.h"

namespace tributary::cuda {

// Maps an error to a StatusCode: out of memory -> ResourceExhausted; no device, no or old driver,
// device unavailable -> Unavailable; anything else -> Internal. The message reads
// "<statement>: cudaErrorX (<description>) at <file>:<line>".
Status CudaErrorStatus(cudaError_t err, const char* statement, const char* file, int line);
Status CublasErrorStatus(cublasStatus_t err, const char* statement, const char* file, int line);

}  // namespace tributary::cuda

#define CUDA_CHECK(stmt)                                                                    \
  do {                                                                                      \
    const cudaError_t _trib_cuda_err = (stmt);                                              \
    if (_trib_cuda_err != cudaSuccess) [[unlikely]]                                         \
      return ::tributary::cuda::CudaErrorStatus(_trib_cuda_err, #stmt, __FILE__, __LINE__); \
  } while (0)

#define CUBLAS_CHECK(stmt)                                                                      \
  do {                                                                                          \
    const cublasStatus_t _trib_cublas_err = (stmt);                                             \
    if (_trib_cublas_err != CUBLAS_STATUS_SUCCESS) [[unlikely]]                                 \
      return ::tributary::cuda::CublasErrorStatus(_trib_cublas_err, #stmt, __FILE__, __LINE__); \
  } while (0)
