// The CUDA backend's module (train/cuda_backend.h), loaded for real: this binary does not link the
// backend's objects, so every device question goes through libtributary_cuda.so. Runs on machines
// without a GPU or a driver: the module still loads (the CUDA libraries are installed where the
// build was made), and says why CUDA cannot be used.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tests/client/temp_dir.h"
#include "train/cuda_backend.h"
#include "train/device.h"
#include "tributary/config.h"

namespace tributary {
namespace {

TEST(CudaBackendTest, TheBuildTreesModuleIsFoundAndAnswersForTheMachine) {
  Result<const CudaBackend*> backend = LoadCudaBackend();
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_EQ(*LoadCudaBackend(), *backend) << "loaded once";
  const CudaInfo& info = QueryCuda();
  EXPECT_TRUE(info.compiled);
  EXPECT_GT(info.runtime_version, 0) << "the module's CUDA runtime answered";
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
