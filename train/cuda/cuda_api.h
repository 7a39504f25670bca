// The CUDA backend's entry points for the rest of train/. Plain C++ (no CUDA headers), but it
// exists only in builds with TRIBUTARY_HAVE_CUDA; code outside train/cuda/ reaches the backend
// through train/device.h, which works in every build.
#pragma once

#include <cstdint>
#include <memory>

#include "train/device.h"
#include "train/engine.h"

namespace tributary {

// A model on GPU `device_index`. Fails (never aborts) with Unavailable when CUDA cannot be used,
// InvalidArgument for a bad index, max_batch or spec, ResourceExhausted when GPU memory runs out.
// See train/cuda/cuda_engine.h for what the engine keeps on the device.
Result<std::unique_ptr<Engine>> CreateCudaEngine(const ModelSpec& spec, int64_t max_batch,
                                                 int device_index);

namespace cuda {

// Asks the CUDA runtime for devices, uncached (QueryCuda() in train/device.h caches this).
CudaInfo QueryDevices();

// Why cudaGetDeviceCount failed, in words a user can act on. `error` is the cudaError_t value,
// `driver_version` and `runtime_version` as cudaDriverGetVersion / cudaRuntimeGetVersion report
// them (driver 0 means no driver is installed).
std::string ExplainInitFailure(int error, int driver_version, int runtime_version);

}  // namespace cuda
}  // namespace tributary
