// CudaContext: what one engine needs to run work on one GPU — the device index, a stream of its
// own (so engines sharing a GPU, e.g. the simulator's virtual clients, do not serialize on the
// legacy default stream) and a cuBLAS handle bound to that stream.
//
// Create() fails with Unavailable when there is no usable device (no driver, old driver, no GPU)
// and InvalidArgument when the index is out of range; it never aborts. Every method makes the
// context's device current on the calling thread first, so a context may be used from any thread,
// but from one thread at a time (not thread-safe).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "tributary/result.h"

namespace tributary::cuda {

class CudaContext {
 public:
  static Result<std::unique_ptr<CudaContext>> Create(int device_index);
  ~CudaContext();
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;

  // Makes this context's device current on the calling thread.
  Status Activate() const;
  // Waits for all work queued on the stream; reports asynchronous kernel faults.
  Status Synchronize() const;

  int device_index() const { return device_; }
  // "NVIDIA H200"
  const std::string& device_name() const { return name_; }
  cudaStream_t stream() const { return stream_; }
  cublasHandle_t cublas() const { return cublas_; }

 private:
  CudaContext() = default;

  int device_ = 0;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
};

}  // namespace tributary::cuda
