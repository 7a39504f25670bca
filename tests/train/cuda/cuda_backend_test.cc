// The CUDA backend's module (train/cuda_backend.h), loaded for real: this binary does not link the
// backend's objects, so every device question goes through libtributary_cuda.so. Runs on machines
// without a GPU or a driver: the module still loads (the CUDA libraries are installed where the
// build was made), and says why CUDA cannot be used.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/client/temp_dir.h"
#include "train/cuda_backend.h"
#include "train/device.h"
#include "tributary/config.h"

namespace tributary {
namespace {

// Whether this process has mapped the module (and so the CUDA libraries it links).
bool ModuleMapped() {
  return dlopen(TRIBUTARY_TEST_CUDA_MODULE, RTLD_NOW | RTLD_NOLOAD) != nullptr;
}

// The client's default device is "cpu": it used to load the module all the same (0.4 s of CPU and
// about 230 MB resident at every start of a CPU-only client of a CUDA build). First in this file:
// run as one binary, the later tests load the module.
TEST(CudaBackendTest, TheCpuDeviceLoadsNoCudaLibrary) {
  if (ModuleMapped()) GTEST_SKIP() << "an earlier test of this process loaded the module";
  Result<EngineFactory> cpu = SelectEngineFactory("cpu", 1);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  auto engine = (*cpu)(*ModelSpecByName("mlp"), 8);
  ASSERT_TRUE(engine.ok()) << engine.status();
  EXPECT_EQ((*engine)->device_name(), "cpu");
  EXPECT_FALSE(ModuleMapped());
}

// Without the NVIDIA driver no GPU can be used: QueryCuda says so without loading the module, and
// "auto" falls back to the CPU with that reason.
TEST(CudaBackendTest, WithoutTheNvidiaDriverTheModuleIsNotLoaded) {
  if (ProbeNvidiaDriver().ok()) GTEST_SKIP() << "this machine has the NVIDIA driver";
  const bool mapped_before = ModuleMapped();
  const CudaInfo& info = QueryCuda();
  EXPECT_TRUE(info.compiled);
  EXPECT_FALSE(info.available());
  EXPECT_EQ(info.device_count, 0);
  EXPECT_EQ(info.runtime_version, TRIBUTARY_CUDA_RUNTIME_VERSION);
  EXPECT_GE(info.runtime_version, 12000);
  EXPECT_EQ(info.unavailable_reason, ProbeNvidiaDriver().message());
  EXPECT_NE(info.unavailable_reason.find("NVIDIA driver"), std::string::npos)
      << info.unavailable_reason;
  Result<EngineFactory> factory = SelectEngineFactory("auto", 1);
  ASSERT_TRUE(factory.ok()) << factory.status();
  EXPECT_EQ((*(*factory)(*ModelSpecByName("mlp"), 8))->device_name(), "cpu");
  Result<EngineFactory> cuda = SelectEngineFactory("cuda", 1);
  ASSERT_FALSE(cuda.ok());
  EXPECT_NE(cuda.status().message().find(info.unavailable_reason), std::string::npos)
      << cuda.status();
  if (!mapped_before) {
    EXPECT_FALSE(ModuleMapped());
  }
}

TEST(CudaBackendTest, TheDriverProbeNamesWhatIsMissing) {
  const Status missing = ProbeNvidiaDriverAt("libtributary_no_such_driver.so.1");
  EXPECT_EQ(missing.code(), StatusCode::kUnavailable);
  EXPECT_EQ(missing.message(),
            "no NVIDIA driver is installed (libtributary_no_such_driver.so.1 was not found)");
  testing::TempDir dir;
  const std::string junk = dir.path() + "/libcuda.so.1";
  std::ofstream(junk) << "not an ELF file";
  const Status bad = ProbeNvidiaDriverAt(junk.c_str());
  EXPECT_EQ(bad.code(), StatusCode::kUnavailable);
  EXPECT_NE(bad.message().find("the NVIDIA driver could not be loaded ("), std::string::npos)
      << bad;
  EXPECT_NE(bad.message().find(junk), std::string::npos) << bad;
  EXPECT_TRUE(ProbeNvidiaDriverAt("libc.so.6").ok());
}

TEST(CudaBackendTest, TheBuildTreesModuleIsFoundAndAnswersForTheMachine) {
  Result<const CudaBackend*> backend = LoadCudaBackend();
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_EQ(*LoadCudaBackend(), *backend) << "loaded once";
  EXPECT_TRUE(ModuleMapped());
  Result<std::string> found = FindCudaBackend();
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_TRUE(std::filesystem::equivalent(*found, TRIBUTARY_TEST_CUDA_MODULE)) << *found;
  // The module's CUDA runtime answers, and is the one this build says it links.
  const CudaInfo asked = (*backend)->query_devices();
  EXPECT_EQ(asked.runtime_version, TRIBUTARY_CUDA_RUNTIME_VERSION);
  const CudaInfo& info = QueryCuda();
  EXPECT_TRUE(info.compiled);
  EXPECT_EQ(info.runtime_version, TRIBUTARY_CUDA_RUNTIME_VERSION);
  if (info.available()) {
    EXPECT_EQ(info.device_names.size(), static_cast<size_t>(info.device_count));
    Result<EngineFactory> factory = SelectEngineFactory("cuda");
    ASSERT_TRUE(factory.ok()) << factory.status();
    auto engine = (*factory)(*ModelSpecByName("mlp"), 8);
    ASSERT_TRUE(engine.ok()) << engine.status();
    EXPECT_EQ((*engine)->device_name().rfind("cuda:0", 0), 0u);
  } else {
    // The runtime's own reason (no driver, no GPU), not the loader's.
    EXPECT_FALSE(info.unavailable_reason.empty());
    EXPECT_EQ(info.unavailable_reason.find("libtributary_cuda"), std::string::npos)
        << info.unavailable_reason;
    Result<EngineFactory> factory = SelectEngineFactory("cuda");
    ASSERT_FALSE(factory.ok());
    EXPECT_EQ(factory.status().code(), StatusCode::kUnavailable);
    EXPECT_NE(factory.status().message().find(info.unavailable_reason), std::string::npos);
  }
}

TEST(CudaBackendTest, AModuleFromAnotherBuildIsRefusedByItsEntryPoint) {
  void* handle = dlopen(TRIBUTARY_TEST_CUDA_MODULE, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto entry = reinterpret_cast<CudaBackendEntry>(dlsym(handle, kCudaBackendEntry));
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry("tributary 0.0.0 (another compiler)", nullptr), nullptr);
  EXPECT_EQ(entry(nullptr, nullptr), nullptr);
  const CudaBackend* mine = entry(CudaBackendBuildId().c_str(), nullptr);
  ASSERT_NE(mine, nullptr);
  ASSERT_NE(mine->query_devices, nullptr);
  ASSERT_NE(mine->create_engine, nullptr);
  // An engine for a device that no machine has is refused with a reason, through the module.
  Result<std::unique_ptr<Engine>> engine = mine->create_engine(*ModelSpecByName("mlp"), 8, 99);
  ASSERT_FALSE(engine.ok());
  EXPECT_FALSE(engine.status().message().empty());
  // The build id names what must match.
  const std::string id = CudaBackendBuildId();
  EXPECT_NE(id.find(TRIBUTARY_VERSION), std::string::npos) << id;
  EXPECT_NE(id.find("ModelSpec"), std::string::npos) << id;
}

TEST(CudaBackendTest, WhatCannotBeLoadedIsNamedWithTheReason) {
  Result<const CudaBackend*> missing = LoadCudaBackendFrom("/nonexistent/libtributary_cuda.so");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/libtributary_cuda.so"), std::string::npos)
      << missing.status();

  testing::TempDir dir;
  const std::string junk = dir.path() + "/libtributary_cuda.so";
  std::ofstream(junk) << "not an ELF file";
  Result<const CudaBackend*> bad = LoadCudaBackendFrom(junk);
  EXPECT_EQ(bad.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(bad.status().message().find(junk), std::string::npos) << bad.status();
  EXPECT_NE(bad.status().message().find("could not be loaded"), std::string::npos) << bad.status();

  // A shared object that is not a backend: the C library itself.
  Dl_info libc;
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&dlopen), &libc), 0);
  Result<const CudaBackend*> other = LoadCudaBackendFrom(libc.dli_fname);
  EXPECT_EQ(other.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(other.status().message().find("is not a Tributary CUDA backend"), std::string::npos)
      << other.status();
}

}  // namespace
}  // namespace tributary
