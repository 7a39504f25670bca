// The backend's entry point for train/cuda_backend.h: the symbol the module libtributary_cuda.so
// exports, and the registration that lets a binary linking these objects itself (the backend's
// tests and benchmarks) use them without loading the module.
#include <string_view>

#include "train/cuda/cuda_api.h"
#include "train/cuda_backend.h"

namespace tributary {
namespace {

const CudaBackend kBackend{&cuda::QueryDevices, &CreateCudaEngine};

[[maybe_unused]] const bool kRegistered = (RegisterCudaBackend(&kBackend), true);

}  // namespace
}  // namespace tributary

extern "C" __attribute__((visibility("default"))) const tributary::CudaBackend*
tributary_cuda_backend_v1(const char* build_id,
                          void (*log)(tributary::LogLevel, const char*, size_t)) {
  if (build_id == nullptr || tributary::CudaBackendBuildId() != build_id) return nullptr;
  if (log != nullptr) {
    // This module's own logger hands every line to the loader's, which applies its level.
    tributary::SetLogHandler(tributary::LogLevel::kTrace,
                             [log](tributary::LogLevel level, std::string_view line) {
                               log(level, line.data(), line.size());
                             });
  }
  return &tributary::kBackend;
}
