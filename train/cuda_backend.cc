#include "train/cuda_backend.h"

#include <dlfcn.h>

#include <atomic>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "core/log.h"
#include "tributary/config.h"

// Set for this file by train/CMakeLists.txt; defaults keep it compiling elsewhere.
#ifndef TRIBUTARY_CUDA_BACKEND_INSTALLED
#define TRIBUTARY_CUDA_BACKEND_INSTALLED ""
#endif
#ifndef TRIBUTARY_CUDA_BACKEND_BUILT
#define TRIBUTARY_CUDA_BACKEND_BUILT ""
#endif
#ifndef TRIBUTARY_INSTALL_LIBDIR
#define TRIBUTARY_INSTALL_LIBDIR "lib"
#endif

namespace tributary {
namespace {

// Constant-initialized, so registrations from other objects' static initializers find it ready.
constinit std::atomic<const CudaBackend*> registered{nullptr};

void ForwardLog(LogLevel level, const char* line, size_t size) {
  Log().Write(level, std::string_view(line, size));
}

// The places of the header's list, in its order (the environment's path alone when it is set).
std::vector<std::string> Candidates() {
  if (const char* env = std::getenv("TRIBUTARY_CUDA_BACKEND"); env && *env) return {env};
  std::vector<std::string> out;
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&LoadCudaBackendFrom), &info) != 0 && info.dli_fname) {
    std::error_code ec;
    std::filesystem::path self = std::filesystem::canonical(info.dli_fname, ec);
    if (!ec) {
      // The object's directory and up to three above it: <bindir>/.. is the prefix, and the
      // Python module sits in <libdir>/python3/dist-packages/tributary/.
      std::filesystem::path dir = self.parent_path();
      out.push_back((dir / kCudaBackendFile).string());
      for (int up = 0; up < 4 && !dir.empty(); ++up, dir = dir.parent_path()) {
        out.push_back((dir / "tributary" / kCudaBackendFile).string());
        out.push_back((dir / TRIBUTARY_INSTALL_LIBDIR / "tributary" / kCudaBackendFile).string());
        if (dir == dir.root_path()) break;
      }
    }
  }
  for (const char* fixed : {TRIBUTARY_CUDA_BACKEND_INSTALLED, TRIBUTARY_CUDA_BACKEND_BUILT})
    if (*fixed) out.emplace_back(fixed);
  return out;
}

}  // namespace

std::string CudaBackendBuildId() {
  return fmt::format("tributary {} ({}; ModelSpec {} CudaInfo {} Status {} Engine {})",
                     TRIBUTARY_VERSION, __VERSION__, sizeof(ModelSpec), sizeof(CudaInfo),
                     sizeof(Status), sizeof(Engine));
}

void RegisterCudaBackend(const CudaBackend* backend) { registered.store(backend); }

Result<const CudaBackend*> LoadCudaBackendFrom(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return Status::NotFound("no CUDA backend module at " + path);
  // RTLD_LOCAL: the module's copies of Tributary's code and its CUDA libraries stay its own.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return Status::Unavailable(
        fmt::format("the CUDA backend {} could not be loaded ({}): are the CUDA runtime and cuBLAS "
                    "libraries installed?",
                    path, why ? why : "unknown dlopen error"));
  }
  auto entry = reinterpret_cast<CudaBackendEntry>(dlsym(handle, kCudaBackendEntry));
  if (entry == nullptr) {
    dlclose(handle);
    return Status::Unavailable(
        fmt::format("{} is not a Tributary CUDA backend (it has no {})", path, kCudaBackendEntry));
  }
  const std::string id = CudaBackendBuildId();
  const CudaBackend* backend = entry(id.c_str(), &ForwardLog);
  if (backend == nullptr) {
    dlclose(handle);
    return Status::Unavailable(fmt::format(
        "the CUDA backend {} comes from another build than this program ({}): install both "
        "from one build",
        path, id));
  }
  // Never unloaded: engines it made may outlive any owner here.
  return backend;
}

Status ProbeNvidiaDriverAt(const char* soname) {
  if (dlopen(soname, RTLD_LAZY | RTLD_LOCAL) != nullptr) return Status::Ok();
  const char* why = dlerror();
  const std::string reason = why ? why : "unknown dlopen error";
  if (reason.find("No such file or directory") != std::string::npos)
    return Status::Unavailable(
        fmt::format("no NVIDIA driver is installed ({} was not found)", soname));
  return Status::Unavailable(fmt::format("the NVIDIA driver could not be loaded ({})", reason));
}

Status ProbeNvidiaDriver() {
  static const Status driver = ProbeNvidiaDriverAt("libcuda.so.1");
  return driver;
}

Result<std::string> FindCudaBackend() {
  const std::vector<std::string> places = Candidates();
  for (const std::string& place : places) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(place, ec)) return place;
  }
  std::string list;
  for (const std::string& place : places) list += (list.empty() ? "" : ", ") + place;
  return Status::NotFound(fmt::format(
      "this build's CUDA backend ({}) was not found (looked at {}); set TRIBUTARY_CUDA_BACKEND "
      "to its path",
      kCudaBackendFile, list.empty() ? "nothing" : list));
}

Result<const CudaBackend*> LoadCudaBackend() {
  if (const CudaBackend* backend = registered.load()) return backend;
  static const Result<const CudaBackend*> loaded = []() -> Result<const CudaBackend*> {
    TRIB_ASSIGN_OR_RETURN(const std::string place, FindCudaBackend());
    Result<const CudaBackend*> backend = LoadCudaBackendFrom(place);
    if (backend.ok()) Log().debug("CUDA backend: loaded {}", place);
    return backend;
  }();
  return loaded;
}

}  // namespace tributary
