// Device selection: turns a device string ("cpu", "auto", "cuda", "cuda:N") into an EngineFactory,
// and says whether CUDA is usable on this machine and, if not, why.
//
//   TRIB_ASSIGN_OR_RETURN(EngineFactory factory, SelectEngineFactory(flags.device));
//   auto trainer = NativeTrainer::Create(spec, train, test, seed, factory);
//
// "auto" uses cuda:0 when the build has the CUDA backend and a usable GPU, and the CPU engine
// otherwise; either way it logs one info line (core/log.h) saying what it chose and, on fallback,
// why (no CUDA in this build, no NVIDIA driver, a driver older than the CUDA runtime, no GPU).
// "cuda" / "cuda:N" never fall back: they fail with a Status naming the reason.
//
// No CUDA headers here: this compiles the same in CPU-only builds. Thread-safe: the CUDA query runs
// once per process and is cached; the factories may be called from any thread, and each engine they
// make is independent (engines on one GPU each get their own stream).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "train/native_trainer.h"
#include "tributary/result.h"

namespace tributary {

// What the CUDA runtime reports about this machine.
struct CudaInfo {
  bool compiled = false;    // this build includes the CUDA backend (TRIBUTARY_HAVE_CUDA)
  int device_count = 0;     // usable GPUs; 0 when unavailable
  int runtime_version = 0;  // CUDA runtime the build uses, e.g. 13000 for 13.0; 0 if not compiled
  int driver_version = 0;   // newest CUDA version the installed driver supports; 0 without a driver
  std::vector<std::string> device_names;  // "NVIDIA H200", one per device
  std::string unavailable_reason;         // why device_count is 0; empty when a GPU is usable
  bool available() const { return device_count > 0; }
};

// Queries the CUDA runtime once per process (later calls return the cached answer). Never fails:
// problems are described in unavailable_reason. Without the NVIDIA driver it says so without
// loading the CUDA backend (train/cuda_backend.h, ProbeNvidiaDriver).
const CudaInfo& QueryCuda();

struct DeviceRequest {
  enum class Kind { kCpu, kAuto, kCuda };
  Kind kind = Kind::kCpu;
  int index = 0;  // for kCuda
};

// Parses "cpu", "auto", "cuda" (= cuda:0) or "cuda:N" (N a decimal in [0, 255]). Anything else is
// InvalidArgument naming the string and the accepted forms.
Result<DeviceRequest> ParseDevice(std::string_view device);

// The outcome of a device request on a machine described by a CudaInfo.
struct DeviceChoice {
  bool use_cuda = false;
  int cuda_index = 0;
  std::string name;             // "cpu" or "cuda:0 (NVIDIA H200)"
  std::string fallback_reason;  // set when "auto" fell back to the CPU
};

// Pure decision (no logging, no CUDA calls), so it can be tested with any CudaInfo. Errors:
// InvalidArgument for a malformed string or an index past the last GPU; Unimplemented for "cuda"
// in a build without the CUDA backend; Unavailable for "cuda" when CUDA cannot be used.
Result<DeviceChoice> ResolveDevice(std::string_view device, const CudaInfo& info);

// ResolveDevice against QueryCuda() (not asked for "cpu"), plus the one log line for "auto", and
// the factory for the choice. The factory builds engines with CreateCpuEngine (on cpu_threads
// threads) or the CUDA backend's CreateCudaEngine.
Result<EngineFactory> SelectEngineFactory(std::string_view device, int cpu_threads = 1);

// Makes CPU engines that train on `threads` threads (engine.h CreateCpuEngine).
EngineFactory CpuEngineFactory(int threads);

// The programs' train.threads key: the CPU engine's threads, 0 meaning every core of this machine
// (std::thread::hardware_concurrency, at least 1). InvalidArgument naming the key unless in
// [0, 256].
Result<int> ResolveCpuThreads(int64_t configured);
inline constexpr const char* kCpuThreadsHelp =
    "threads that train the model on the CPU engine (0: every core); results are deterministic "
    "for a seed and a thread count";

}  // namespace tributary
