#include "train/device.h"

#include <algorithm>
#include <thread>

#include "core/log.h"
#include "core/parse_number.h"
#include "tributary/config.h"
#if TRIBUTARY_HAVE_CUDA
#include "train/cuda_backend.h"
#endif

namespace tributary {
namespace {

constexpr int kMaxCudaIndex = 255;

std::string CudaName(const CudaInfo& info, int index) {
  return "cuda:" + std::to_string(index) + " (" + info.device_names[static_cast<size_t>(index)] +
         ")";
}

}  // namespace

const CudaInfo& QueryCuda() {
  // A function-local static: initialized once, thread-safely, on first use. The set of GPUs does
  // not change under a running process, and asking the driver costs milliseconds per device.
  static const CudaInfo info = [] {
#if TRIBUTARY_HAVE_CUDA
    CudaInfo i;
    i.compiled = true;
    i.runtime_version = TRIBUTARY_CUDA_RUNTIME_VERSION;
    // No NVIDIA driver, no GPU: said without loading the backend's CUDA libraries.
    if (Status driver = ProbeNvidiaDriver(); !driver.ok()) {
      i.unavailable_reason = driver.message();
      Result<std::string> module = FindCudaBackend();
      Log().debug("CUDA backend: {}, not loaded: {}",
                  module.ok() ? "found " + *module : module.status().message(),
                  i.unavailable_reason);
      return i;
    }
    // The backend is a module loaded now (train/cuda_backend.h); without it, nothing on this
    // machine can use CUDA, and the reason says why.
    Result<const CudaBackend*> backend = LoadCudaBackend();
    if (backend.ok()) return (*backend)->query_devices();
    i.unavailable_reason = backend.status().message();
    return i;
#else
    CudaInfo i;
    i.unavailable_reason =
        "this build has no CUDA backend (it was configured without nvcc or with "
        "-DTRIBUTARY_CUDA=OFF)";
    return i;
#endif
  }();
  return info;
}

Result<DeviceRequest> ParseDevice(std::string_view device) {
  auto bad = [&] {
    return Status::InvalidArgument("unknown device '" + std::string(device) +
                                   "'; use cpu, auto, cuda or cuda:N (N = 0.." +
                                   std::to_string(kMaxCudaIndex) + ")");
  };
  DeviceRequest r;
  if (device == "cpu") {
    r.kind = DeviceRequest::Kind::kCpu;
  } else if (device == "auto") {
    r.kind = DeviceRequest::Kind::kAuto;
  } else if (device == "cuda") {
    r.kind = DeviceRequest::Kind::kCuda;
  } else if (device.starts_with("cuda:")) {
    const std::string_view num = device.substr(5);
    // Plain decimal digits only: no sign, no spaces, no leading zeros beyond "0" itself.
    if (num.empty() || num.size() > 3 || (num.size() > 1 && num[0] == '0')) return bad();
    const int index = ParseWhole<int>(num).value_or(-1);
    if (index < 0 || index > kMaxCudaIndex) return bad();
    r.kind = DeviceRequest::Kind::kCuda;
    r.index = index;
  } else {
    return bad();
  }
  return r;
}

Result<DeviceChoice> ResolveDevice(std::string_view device, const CudaInfo& info) {
  TRIB_ASSIGN_OR_RETURN(DeviceRequest req, ParseDevice(device));
  DeviceChoice choice;
  choice.name = "cpu";
  switch (req.kind) {
    case DeviceRequest::Kind::kCpu:
      return choice;
    case DeviceRequest::Kind::kAuto:
      if (!info.compiled || !info.available()) {
        choice.fallback_reason =
            info.unavailable_reason.empty() ? "CUDA is unavailable" : info.unavailable_reason;
        return choice;
      }
      choice.use_cuda = true;
      choice.cuda_index = 0;
      choice.name = CudaName(info, 0);
      return choice;
    case DeviceRequest::Kind::kCuda:
      break;
  }
  const std::string what = "device '" + std::string(device) + "'";
  if (!info.compiled)
    return Status::Unimplemented(
        what +
        ": this build has no CUDA backend (rebuild with -DTRIBUTARY_CUDA=ON on a "
        "machine with nvcc); use --device cpu or auto");
  if (!info.available())
    return Status::Unavailable(what + ": CUDA is unavailable: " + info.unavailable_reason +
                               "; use --device cpu, or auto to fall back to the CPU");
  if (req.index >= info.device_count)
    return Status::InvalidArgument(
        what + ": this machine has " + std::to_string(info.device_count) +
        " CUDA device(s), cuda:0 to cuda:" + std::to_string(info.device_count - 1));
  choice.use_cuda = true;
  choice.cuda_index = req.index;
  choice.name = CudaName(info, req.index);
  return choice;
}

Result<int> ResolveCpuThreads(int64_t configured) {
  if (configured < 0 || configured > 256)
    return Status::InvalidArgument(
        "key 'train.threads' (--threads) must be in [0, 256] (0: every "
        "core), got " +
        std::to_string(configured));
  if (configured > 0) return static_cast<int>(configured);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

EngineFactory CpuEngineFactory(int threads) {
  return [threads](const ModelSpec& spec, int64_t max_batch) {
    return CreateCpuEngine(spec, max_batch, threads);
  };
}

Result<EngineFactory> SelectEngineFactory(std::string_view device, int cpu_threads) {
  // "cpu" asks nothing of CUDA: the query may load the backend's libraries.
  TRIB_ASSIGN_OR_RETURN(const DeviceRequest request, ParseDevice(device));
  if (request.kind == DeviceRequest::Kind::kCpu) return CpuEngineFactory(cpu_threads);
  TRIB_ASSIGN_OR_RETURN(DeviceChoice choice, ResolveDevice(device, QueryCuda()));
  if (device == "auto") {
    if (choice.use_cuda)
      Log().info("device auto: using {}", choice.name);
    else
      Log().info("device auto: using the CPU engine because {}", choice.fallback_reason);
  }
  if (!choice.use_cuda) return CpuEngineFactory(cpu_threads);
#if TRIBUTARY_HAVE_CUDA
  // QueryCuda found a GPU, so the backend is loaded.
  TRIB_ASSIGN_OR_RETURN(const CudaBackend* backend, LoadCudaBackend());
  const int index = choice.cuda_index;
  return EngineFactory([backend, index](const ModelSpec& spec, int64_t max_batch) {
    return backend->create_engine(spec, max_batch, index);
  });
#else
  return Status::Internal("ResolveDevice chose CUDA in a build without the CUDA backend");
#endif
}

}  // namespace tributary
