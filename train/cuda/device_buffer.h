// DeviceBuffer<T>: an owned array in GPU memory (cudaMalloc); PinnedBuffer<T>: an owned array in
// page-locked host memory (cudaMallocHost), for asynchronous copies.
//
// Move-only. Allocation reports failure as a Status (ResourceExhausted when out of memory); the
// destructor frees and ignores errors (a dead context has nothing left to free). Freeing must
// happen with the owning device current when several GPUs are in use; CudaEngine takes care of it.
// Not thread-safe.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "train/cuda/cuda_check.h"

namespace tributary::cuda {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { Reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      Reset();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // Frees any old contents and allocates n elements (uninitialized). n == 0 frees.
  Status Allocate(size_t n) {
    Reset();
    if (n == 0) return Status::Ok();
    void* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, n * sizeof(T)));
    p_ = static_cast<T*>(p);
    n_ = n;
    return Status::Ok();
  }
  // (Re)allocates n elements and copies host[0, n) in on `stream`, waiting until the copy is done.
  // (Plain cudaMemcpy would run on the legacy default stream, which does not order with the
  // non-blocking streams the engines use.)
  Status Upload(const T* host, size_t n, cudaStream_t stream) {
    if (n != n_) TRIB_RETURN_IF_ERROR(Allocate(n));
    if (n > 0) {
      CUDA_CHECK(cudaMemcpyAsync(p_, host, n * sizeof(T), cudaMemcpyHostToDevice, stream));
      CUDA_CHECK(cudaStreamSynchronize(stream));
    }
    return Status::Ok();
  }
  Status Upload(const std::vector<T>& host, cudaStream_t stream) {
    return Upload(host.data(), host.size(), stream);
  }
  // Copies the whole buffer out, after the work queued before it on `stream`, and waits.
  Status Download(std::vector<T>* host, cudaStream_t stream) const {
    host->resize(n_);
    if (n_ > 0) {
      CUDA_CHECK(cudaMemcpyAsync(host->data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost, stream));
      CUDA_CHECK(cudaStreamSynchronize(stream));
    }
    return Status::Ok();
  }

  void Reset() {
    if (p_ != nullptr) (void)cudaFree(p_);
    p_ = nullptr;
    n_ = 0;
  }
  T* data() { return p_; }
  const T* data() const { return p_; }
  size_t size() const { return n_; }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

template <typename T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() { Reset(); }
  PinnedBuffer(PinnedBuffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
      Reset();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  Status Allocate(size_t n) {
    Reset();
    if (n == 0) return Status::Ok();
    void* p = nullptr;
    CUDA_CHECK(cudaMallocHost(&p, n * sizeof(T)));
    p_ = static_cast<T*>(p);
    n_ = n;
    return Status::Ok();
  }
  void Reset() {
    if (p_ != nullptr) (void)cudaFreeHost(p_);
    p_ = nullptr;
    n_ = 0;
  }
  T* data() { return p_; }
  const T* data() const { return p_; }
  size_t size() const { return n_; }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

}  // namespace tributary::cuda
