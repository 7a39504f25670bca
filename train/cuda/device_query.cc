// Device discovery for train/device.h: how many GPUs the CUDA runtime sees, and when it sees none,
// why, in terms a user can act on.
#include <cuda_runtime_api.h>

#include <string>

#include "train/cuda/cuda_api.h"

namespace tributary::cuda {
namespace {

// 13000 -> "13.0"
std::string VersionString(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

}  // namespace

std::string ExplainInitFailure(int error, int driver_version, int runtime_version) {
  const auto err = static_cast<cudaError_t>(error);
  const std::string code = std::string(" (") + cudaGetErrorName(err) + ")";
  switch (err) {
    case cudaErrorNoDevice:
      return "no CUDA-capable GPU is visible" + code;
    case cudaErrorInsufficientDriver:
      if (driver_version == 0)
        return "no NVIDIA driver is installed (libcuda.so.1 was not found)" + code;
      return "the NVIDIA driver is too old: it supports CUDA " + VersionString(driver_version) +
             " but this build needs CUDA " + VersionString(runtime_version) +
             "; update the driver" + code;
    case cudaErrorStubLibrary:
      return "the CUDA driver library found is a stub, not a real driver (is libcuda from "
             "/usr/local/cuda/lib64/stubs on the library path?)" +
             code;
    case cudaErrorSystemDriverMismatch:
      return "the NVIDIA kernel module and user-space driver versions do not match; reload the "
             "driver" +
             code;
    case cudaErrorDevicesUnavailable:
      return "every GPU is busy or in exclusive-process mode" + code;
    default:
      return std::string("the CUDA runtime failed to initialize: ") + cudaGetErrorString(err) +
             code;
  }
}

CudaInfo QueryDevices() {
  CudaInfo info;
  info.compiled = true;
  (void)cudaRuntimeGetVersion(&info.runtime_version);
  if (cudaDriverGetVersion(&info.driver_version) != cudaSuccess) info.driver_version = 0;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // cudaGetDeviceCount's failure is not a kernel fault; do not leave
                               // it sticky
    info.unavailable_reason =
        ExplainInitFailure(static_cast<int>(err), info.driver_version, info.runtime_version);
    return info;
  }
  if (count <= 0) {
    info.unavailable_reason = "no CUDA-capable GPU is visible";
    return info;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
      (void)cudaGetLastError();
      info.device_names.push_back("unknown GPU");
    } else {
      info.device_names.emplace_back(prop.name);
    }
  }
  info.device_count = count;
  return info;
}

}  // namespace tributary::cuda
