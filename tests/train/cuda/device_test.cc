// Device selection (train/device.h). Runs in every build, with or without CUDA or a GPU: the
// decision logic is tested against described machines, and the real machine's "auto" must land on
// a working engine with exactly one log line.
#include <gtest/gtest.h>

#include <sstream>

#include "tests/core/log_capture.h"
#include "train/device.h"
#include "tributary/config.h"

namespace tributary {
namespace {

CudaInfo NoCudaBuild() {
  CudaInfo i;
  i.unavailable_reason = "this build has no CUDA backend";
  return i;
}
CudaInfo OldDriver() {
  CudaInfo i;
  i.compiled = true;
  i.runtime_version = 13000;
  i.driver_version = 12020;
  i.unavailable_reason =
      "the NVIDIA driver is too old: it supports CUDA 12.2 but this build needs CUDA 13.0";
  return i;
}
CudaInfo TwoGpus() {
  CudaInfo i;
  i.compiled = true;
  i.device_count = 2;
  i.device_names = {"GPU A", "GPU B"};
  return i;
}

TEST(ParseDeviceTest, AcceptsTheDocumentedForms) {
  EXPECT_EQ(ParseDevice("cpu")->kind, DeviceRequest::Kind::kCpu);
  EXPECT_EQ(ParseDevice("auto")->kind, DeviceRequest::Kind::kAuto);
  EXPECT_EQ(ParseDevice("cuda")->kind, DeviceRequest::Kind::kCuda);
  EXPECT_EQ(ParseDevice("cuda")->index, 0);
  EXPECT_EQ(ParseDevice("cuda:0")->index, 0);
  EXPECT_EQ(ParseDevice("cuda:7")->index, 7);
  EXPECT_EQ(ParseDevice("cuda:255")->index, 255);
}

TEST(ParseDeviceTest, RejectsEverythingElseNamingTheString) {
  for (const char* bad :
       {"", "gpu", "CPU", "Cuda", "cuda:", "cuda:-1", "cuda:+1", "cuda:01", "cuda:256", "cuda: 1",
        "cuda:1x", "cuda0", "cpu ", " auto", "cuda:1:2", "cuda:99999999999"}) {
    auto r = ParseDevice(bad);
    ASSERT_FALSE(r.ok()) << "'" << bad << "' was accepted";
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("'" + std::string(bad) + "'"), std::string::npos)
        << r.status();
    EXPECT_NE(r.status().message().find("cpu, auto, cuda or cuda:N"), std::string::npos)
        << r.status();
  }
}

TEST(ResolveDeviceTest, CpuIsAlwaysTheCpu) {
  for (const CudaInfo& info : {NoCudaBuild(), OldDriver(), TwoGpus()}) {
    auto c = ResolveDevice("cpu", info);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_FALSE(c->use_cuda);
    EXPECT_EQ(c->name, "cpu");
    EXPECT_TRUE(c->fallback_reason.empty());
  }
}

TEST(ResolveDeviceTest, AutoFallsBackToTheCpuSayingWhy) {
  auto no_build = ResolveDevice("auto", NoCudaBuild());
  ASSERT_TRUE(no_build.ok());
  EXPECT_FALSE(no_build->use_cuda);
  EXPECT_EQ(no_build->fallback_reason, "this build has no CUDA backend");
  auto old = ResolveDevice("auto", OldDriver());
  ASSERT_TRUE(old.ok());
  EXPECT_FALSE(old->use_cuda);
  EXPECT_NE(old->fallback_reason.find("driver is too old"), std::string::npos);
}

TEST(ResolveDeviceTest, AutoPicksTheFirstGpu) {
  auto c = ResolveDevice("auto", TwoGpus());
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->use_cuda);
  EXPECT_EQ(c->cuda_index, 0);
  EXPECT_EQ(c->name, "cuda:0 (GPU A)");
  EXPECT_TRUE(c->fallback_reason.empty());
}

TEST(ResolveDeviceTest, CudaNeverFallsBack) {
  auto no_build = ResolveDevice("cuda", NoCudaBuild());
  EXPECT_EQ(no_build.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(no_build.status().message().find("no CUDA backend"), std::string::npos)
      << no_build.status();
  auto old = ResolveDevice("cuda:0", OldDriver());
  EXPECT_EQ(old.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(old.status().message().find("driver is too old"), std::string::npos) << old.status();
  EXPECT_NE(old.status().message().find("device 'cuda:0'"), std::string::npos) << old.status();
}

TEST(ResolveDeviceTest, CudaIndexMustExist) {
  auto second = ResolveDevice("cuda:1", TwoGpus());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->cuda_index, 1);
  EXPECT_EQ(second->name, "cuda:1 (GPU B)");
  auto third = ResolveDevice("cuda:2", TwoGpus());
  EXPECT_EQ(third.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(third.status().message().find("2 CUDA device(s), cuda:0 to cuda:1"), std::string::npos)
      << third.status();
}

using testing::LogCapture;

TEST(SelectEngineFactoryTest, AutoOnThisMachineWorksAndLogsOneLine) {
  const CudaInfo& info = QueryCuda();
  EXPECT_EQ(info.compiled, TRIBUTARY_HAVE_CUDA == 1);
  std::vector<std::string> lines;
  Result<EngineFactory> factory = Status::Internal("unset");
  {
    LogCapture capture;
    factory = SelectEngineFactory("auto");
    lines = capture.lines();
  }
  ASSERT_TRUE(factory.ok()) << factory.status();
  ASSERT_EQ(lines.size(), 1u);
  auto engine = (*factory)(*ModelSpecByName("mlp"), 8);
  ASSERT_TRUE(engine.ok()) << engine.status();
  if (info.available()) {
    EXPECT_EQ(lines[0], "info|device auto: using " + (*engine)->device_name());
    EXPECT_EQ((*engine)->device_name().rfind("cuda:0", 0), 0u);
  } else {
    EXPECT_EQ(lines[0],
              "info|device auto: using the CPU engine because " + info.unavailable_reason);
    EXPECT_EQ((*engine)->device_name(), "cpu");
  }
}

TEST(SelectEngineFactoryTest, CudaOnThisMachineSucceedsOnlyWithAGpu) {
  const CudaInfo& info = QueryCuda();
  LogCapture capture;
  auto factory = SelectEngineFactory("cuda");
  EXPECT_TRUE(capture.lines().empty()) << "only auto logs its choice";
  if (info.available()) {
    ASSERT_TRUE(factory.ok()) << factory.status();
    auto engine = (*factory)(*ModelSpecByName("mlp"), 8);
    ASSERT_TRUE(engine.ok()) << engine.status();
    EXPECT_EQ((*engine)->device_name().rfind("cuda:0", 0), 0u);
  } else {
    ASSERT_FALSE(factory.ok());
    EXPECT_EQ(factory.status().code(),
              info.compiled ? StatusCode::kUnavailable : StatusCode::kUnimplemented);
    EXPECT_NE(factory.status().message().find(info.compiled ? info.unavailable_reason
                                                            : "no CUDA backend"),
              std::string::npos)
        << factory.status();
  }
}

TEST(SelectEngineFactoryTest, CpuAndBadStrings) {
  auto cpu = SelectEngineFactory("cpu");
  ASSERT_TRUE(cpu.ok());
  auto engine = (*cpu)(*ModelSpecByName("mlp"), 8);
  ASSERT_TRUE(engine.ok());
  EXPECT_EQ((*engine)->device_name(), "cpu");
  EXPECT_EQ(SelectEngineFactory("tpu").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SelectEngineFactory("cuda:x").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tributary
