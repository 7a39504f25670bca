// The CUDA backend as a plugin: builds with TRIBUTARY_HAVE_CUDA put the backend (its kernels, the
// CUDA runtime and cuBLAS) in a module of its own, libtributary_cuda.so, which the programs, the C
// API library and the Python module load with dlopen the first time a device is asked about
// (QueryCuda in train/device.h), where the NVIDIA driver is installed (ProbeNvidiaDriver below).
// A process that trains on the CPU never maps the CUDA libraries
// (cuBLAS alone is over 500 MB and took about 0.4 s of CPU to load at every program start), and a
// CUDA build runs on machines where they are not installed: "auto" falls back to the CPU saying
// why, "cuda" fails naming it.
//
// Where the module is looked for, first found wins:
//   1. $TRIBUTARY_CUDA_BACKEND, a path to the module (only there, when set);
//   2. beside the program, library or Python module that holds this code, wherever the install
//      was moved: <dir>/libtributary_cuda.so, then for <dir> and up to three directories above
//      it, <d>/tributary/libtributary_cuda.so and <d>/<libdir>/tributary/libtributary_cuda.so
//      (from <bindir>, <libdir>, or <libdir>/python3/dist-packages/tributary);
//   3. <prefix>/<libdir>/tributary/libtributary_cuda.so, where `cmake --install` puts it;
//   4. the build tree's train/cuda/libtributary_cuda.so (programs run from their build tree).
//
// The module and the code that loads it must come from one build (they share C++ types): the
// module's entry point checks a build id (version, compiler, the shared types' sizes) and refuses
// another build's, which the reason then says. A binary that links the backend's objects itself
// (its own tests and benchmarks) registers them at start-up and never loads the module.
//
// Thread-safe: the module is loaded once per process, under a function-local static.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "train/device.h"
#include "train/engine.h"
#include "tributary/log.h"
#include "tributary/result.h"

namespace tributary {

// What the module hands back: the backend's two entry points (train/cuda/cuda_api.h).
struct CudaBackend {
  CudaInfo (*query_devices)();
  Result<std::unique_ptr<Engine>> (*create_engine)(const ModelSpec& spec, int64_t max_batch,
                                                   int device_index);
};

// The module's one exported symbol. `build_id` is the loader's CudaBackendBuildId(); `log` takes
// the module's log lines into the loader's logger (core/log.h). Returns null for another build.
using CudaBackendEntry = const CudaBackend* (*)(const char* build_id,
                                                void (*log)(LogLevel, const char*, size_t));
inline constexpr const char* kCudaBackendEntry = "tributary_cuda_backend_v1";
inline constexpr const char* kCudaBackendFile = "libtributary_cuda.so";

// This build's id: the version, the compiler and the sizes of the types the module shares.
std::string CudaBackendBuildId();

// Makes `backend` this process's backend: LoadCudaBackend returns it and loads no module. For
// binaries that link the backend's objects (and for the module itself).
void RegisterCudaBackend(const CudaBackend* backend);

// The registered backend, or the module from the places above, loaded once; the error (cached
// too) names where it looked or why the module it found could not be used.
Result<const CudaBackend*> LoadCudaBackend();

// The first place of the list above that holds a file (not loaded), or NotFound naming every
// place looked at.
Result<std::string> FindCudaBackend();

// Whether the NVIDIA driver's library (libcuda.so.1, which the CUDA runtime itself loads at its
// first call) loads on this machine, asked once per process: OK, or Unavailable naming why. Without
// the driver no GPU can be used, so QueryCuda says so before it loads the module, whose CUDA
// libraries cost a CPU-only machine 0.4 s of CPU and about 230 MB of resident memory at every
// program start. The library stays loaded (the runtime would load it again).
Status ProbeNvidiaDriver();

// ProbeNvidiaDriver for the library `soname` (not cached, for tests).
Status ProbeNvidiaDriverAt(const char* soname);

// Loads the module at `path` (not cached, for tests): NotFound when there is no file there,
// Unavailable when dlopen fails (its reason: a CUDA library missing) or the module is not a
// Tributary CUDA backend of this build.
Result<const CudaBackend*> LoadCudaBackendFrom(const std::string& path);

}  // namespace tributary
