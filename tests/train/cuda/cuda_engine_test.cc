// The CUDA engine end to end against the CPU engine: whole-network gradients (and finite
// differences on the GPU itself), a whole NativeTrainer fit of a few steps, determinism, the
// once-per-dataset upload, and errors that must come back as Status rather than aborts.
#include <gtest/gtest.h>

#include <numeric>
#include <string>

#include "tests/train/cuda/cuda_test_util.h"
#include "tests/train/grad_check.h"
#include "tests/train/synthetic_images.h"
#include "train/cpu/cpu_engine.h"
#include "train/cuda/cuda_api.h"
#include "train/cuda/cuda_engine.h"
#include "train/device.h"
#include "train/model_file.h"
#include "train/model_split.h"
#include "train/native_trainer.h"

namespace tributary::cuda {
namespace {

using testing::CudaParamTest;
using testing::CudaTest;
using testing::kNmseTolerance;
using testing::Nmse;

Dataset Synthetic(int64_t n, uint64_t seed, int64_t hw = 28) {
  return ::tributary::testing::SyntheticImages(n, seed, hw);
}

std::unique_ptr<CudaEngine> MakeEngine(const ModelSpec& spec, int64_t max_batch) {
  auto e = CudaEngine::Create(spec, max_batch, 0);
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? std::move(*e) : nullptr;
}

class CudaModelTest : public CudaParamTest<const char*> {};

// One batch of 32 samples (from `first`) on the CPU and CUDA engines from weights `w`: the same
// loss, correct count and gradients.
void ExpectGradientsMatchCpu(const ModelSpec& spec, const ModelWeights& w, const Dataset& data,
                             uint32_t first) {
  std::vector<uint32_t> batch(32);
  std::iota(batch.begin(), batch.end(), first);
  auto cpu = *cpu::CpuEngine::Create(spec, 32);
  ASSERT_TRUE(cpu->LoadWeights(w).ok());
  const StepStats want = cpu->ComputeGradients(data, batch);
  auto gpu = MakeEngine(spec, 32);
  ASSERT_NE(gpu, nullptr);
  ASSERT_TRUE(gpu->LoadWeights(w).ok());
  auto got = gpu->ComputeGradients(data, batch);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_NEAR(got->loss_sum, want.loss_sum, 1e-4 * want.loss_sum);
  EXPECT_EQ(got->correct, want.correct);
  EXPECT_EQ(got->count, 32);
  std::vector<float> grads;
  ASSERT_TRUE(gpu->DownloadGradients(&grads).ok());
  const std::vector<float> want_grads(cpu->grads().begin(), cpu->grads().end());
  EXPECT_LE(Nmse(grads, want_grads), kNmseTolerance);
}

TEST_P(CudaModelTest, GradientsMatchCpuEngine) {
  const ModelSpec spec = *ModelSpecByName(GetParam());
  ExpectGradientsMatchCpu(spec, *InitWeights(spec, 5), Synthetic(40, 3), 4);
}

// Every layer type the zoo does not use (the smooth activations, average pooling, GroupNorm and
// LayerNorm, dropout: both engines draw its mask alike; a residual add), in one model: the CUDA
// engine's loss and gradients are the CPU engine's.
using CudaLayersTest = CudaTest;

TEST_F(CudaLayersTest, EveryOtherLayerTypeMatchesTheCpuEngine) {
  const char* text = R"(name = "every_layer"
layers = [
  { type = "conv2d", filters = 8, kernel = 3, padding = 1 },
  { type = "groupnorm", groups = 4 },
  { type = "gelu" },
  { type = "avgpool2d", size = 2 },
  { type = "conv2d", filters = 6, kernel = 3 },
  { type = "layernorm" },
  { type = "tanh" },
  { type = "depthwiseconv2d", kernel = 3, padding = 1 },
  { type = "conv1d", filters = 5, kernel = 3, padding = 1 },
  { type = "globalavgpool" },
  { type = "dense", units = 16 },
  { type = "sigmoid" },
  { type = "dropout", rate = 0.3 },
  { type = "dense", units = 16 },
  { type = "add", from = 11 },
  { type = "dense" },
]
)";
  Result<ModelSpec> parsed = ParseModelToml(text, "every_layer.toml", {28, 28, 1}, 10);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ExpectGradientsMatchCpu(*parsed, *InitWeights(*parsed, 6), Synthetic(40, 4), 2);
}

// The sequence layers: an embedding (token ids in, its table's rows summed per token in the CPU's
// order), an LSTM returning every step, a conv1d over them, a GRU returning every step and an
// LSTM returning the last: the CUDA engine's loss and gradients are the CPU engine's, with and
// without sequence lengths.
TEST_F(CudaLayersTest, TheSequenceLayersMatchTheCpuEngine) {
  // Every window whole, then windows of 0 to 16 tokens padded with token 29 (the embedding's pad:
  // the recurrent layers stop at each sample's length).
  for (const bool padded : {false, true}) {
    SCOPED_TRACE(padded ? "padded" : "whole");
    const std::string text = std::string(R"(name = "text"
layers = [
  { type = "embedding", vocab = 30, dim = 8)") +
                             (padded ? ", pad = 29" : "") + R"( },
  { type = "lstm", units = 12, return_sequences = true },
  { type = "conv1d", filters = 6, kernel = 3, padding = 1 },
  { type = "relu" },
  { type = "gru", units = 7, return_sequences = true },
  { type = "lstm", units = 10 },
  { type = "dense" },
]
)";
    Result<ModelSpec> parsed = ParseModelToml(text, "text.toml", {16, 1, 1}, 10);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    Dataset tokens;
    tokens.name = "tokens";
    tokens.height = 16;
    tokens.width = tokens.channels = 1;
    Rng rng(7);
    for (int i = 0; i < 40; ++i) {
      tokens.labels.push_back(static_cast<uint8_t>(rng.UniformInt(10)));
      const int length = padded ? static_cast<int>(rng.UniformInt(17)) : 16;
      for (int p = 0; p < 16; ++p)
        tokens.images.push_back(p < length ? static_cast<float>(rng.UniformInt(29)) : 29.0f);
    }
    ExpectGradientsMatchCpu(*parsed, *InitWeights(*parsed, 6), tokens, 3);
  }
}

TEST_P(CudaModelTest, GradientsMatchFiniteDifferences) {
  const ModelSpec spec = *ModelSpecByName(GetParam());
  ModelWeights w = *InitWeights(spec, 3);
  const Dataset data = Synthetic(4, 9);
  const std::vector<uint32_t> batch = {0, 1, 2, 3};
  auto gpu = MakeEngine(spec, 4);
  ASSERT_NE(gpu, nullptr);
  ASSERT_TRUE(gpu->LoadWeights(w).ok());
  ASSERT_TRUE(gpu->ComputeGradients(data, batch).ok());
  std::vector<float> analytic;
  ASSERT_TRUE(gpu->DownloadGradients(&analytic).ok());
  std::vector<float> params(w.data().begin(), w.data().end());
  auto loss = [&]() {
    std::copy(params.begin(), params.end(), w.data().begin());
    EXPECT_TRUE(gpu->LoadWeights(w).ok());
    return gpu->EvalStep(data, batch).loss_sum / 4.0;
  };
  EXPECT_LT(tributary::testing::WorstRelativeError(loss, params, analytic, 120, 77, 5e-3), 2e-2)
      << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Zoo, CudaModelTest, ::testing::Values("mlp", "cnn", "lenet"));

// A whole fit through NativeTrainer, the path clients use: a few steps with momentum, weight decay
// and a proximal term, on each backend from the same global weights.
class CudaFitTest : public CudaParamTest<const char*> {
 protected:
  Result<FitResult> Fit(EngineFactory factory) {
    auto data = std::make_shared<const Dataset>(Synthetic(200, 4));
    TRIB_ASSIGN_OR_RETURN(
        auto trainer, NativeTrainer::Create(*ModelSpecByName(GetParam()), data, data, 11, factory));
    TRIB_ASSIGN_OR_RETURN(ModelWeights global, trainer->get_parameters());
    FitConfig cfg;
    cfg.epochs = 2;
    cfg.batch_size = 32;
    cfg.lr = 0.05f;
    cfg.momentum = 0.9f;
    cfg.weight_decay = 1e-4f;
    cfg.proximal_mu = 0.01f;
    cfg.max_steps = 10;
    cfg.seed = 3;
    return trainer->fit(global, cfg);
  }
};

TEST_P(CudaFitTest, FewStepsMatchCpuAndRepeatBitwise) {
  auto cpu = Fit(CpuEngineFactory(1));
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  auto gpu_factory = [](const ModelSpec& s, int64_t b) { return CreateCudaEngine(s, b, 0); };
  auto gpu = Fit(gpu_factory);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  const std::vector<float> want(cpu->weights.data().begin(), cpu->weights.data().end());
  const std::vector<float> got(gpu->weights.data().begin(), gpu->weights.data().end());
  EXPECT_LE(Nmse(got, want), kNmseTolerance);
  EXPECT_NEAR(gpu->metrics["train_loss"], cpu->metrics["train_loss"], 1e-3);
  EXPECT_EQ(gpu->num_examples, cpu->num_examples);
  auto again = Fit(gpu_factory);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->weights == gpu->weights) << "the CUDA backend must be deterministic";
}

INSTANTIATE_TEST_SUITE_P(Zoo, CudaFitTest, ::testing::Values("mlp", "cnn"));

// Split learning on the GPU (engine.h's ForwardToCut, TrainFromCut, BackwardFromCut): a device
// part and a server part on CUDA engines train, step after step, to the CPU engine's whole model
// (NMSE), and the gradient at the cut goes through the host as it would to a client.
TEST_P(CudaModelTest, SplitPartsTrainToTheCpuWholeModel) {
  const ModelSpec spec = *ModelSpecByName(GetParam());
  const SplitModel split = *CutModel(spec, static_cast<size_t>(spec.cut));
  const ModelWeights init = *InitWeights(spec, 5);
  const auto parts = *SplitWeights(split, init);
  const Dataset data = Synthetic(96, 3);
  auto cpu = *cpu::CpuEngine::Create(spec, 32);
  auto device = MakeEngine(split.device, 32);
  auto server = MakeEngine(split.server, 32);
  ASSERT_NE(device, nullptr);
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(cpu->LoadWeights(init).ok());
  ASSERT_TRUE(device->LoadWeights(parts.first).ok());
  ASSERT_TRUE(server->LoadWeights(parts.second).ok());
  const SgdConfig sgd{0.05f, 0.9f, 1e-4f, 0.0f};
  const int64_t cut = split.cut_shape.numel();
  for (int step = 0; step < 3; ++step) {
    std::vector<uint32_t> batch(step == 2 ? 17 : 32);
    std::iota(batch.begin(), batch.end(), static_cast<uint32_t>(step * 20));
    const StepStats want = cpu->TrainStep(data, batch, sgd);
    std::vector<float> acts(batch.size() * cut), grad(acts.size());
    std::vector<uint8_t> labels;
    for (uint32_t i : batch) labels.push_back(data.labels[i]);
    ASSERT_TRUE(device->ForwardToCut(data, batch, acts).ok());
    auto got = server->TrainFromCut(acts, labels, sgd, grad);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_TRUE(device->BackwardFromCut(grad, sgd).ok());
    EXPECT_NEAR(got->loss_sum, want.loss_sum, 1e-4 * want.loss_sum) << "step " << step;
    EXPECT_EQ(got->count, static_cast<int64_t>(batch.size()));
  }
  ModelWeights w = init.ZerosLike(), d = parts.first.ZerosLike(), s = parts.second.ZerosLike();
  ASSERT_TRUE(cpu->StoreWeights(&w).ok());
  ASSERT_TRUE(device->StoreWeights(&d).ok());
  ASSERT_TRUE(server->StoreWeights(&s).ok());
  const ModelWeights joined = *JoinWeights(split, d, s);
  const std::vector<float> want(w.data().begin(), w.data().end());
  const std::vector<float> got(joined.data().begin(), joined.data().end());
  EXPECT_LE(Nmse(got, want), kNmseTolerance) << GetParam();
  // The wrong part's calls are statuses, not aborts.
  std::vector<float> probe(32 * cut);
  std::vector<uint32_t> first(32);
  std::iota(first.begin(), first.end(), 0u);
  EXPECT_EQ(server->ForwardToCut(data, first, probe).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(device->BackwardFromCut(probe, sgd).code(), StatusCode::kFailedPrecondition);
}

using CudaEngineTest = CudaTest;

TEST_F(CudaEngineTest, UploadsEachDatasetOnceAndReportsItsDevice) {
  const ModelSpec spec = *ModelSpecByName("mlp");
  auto gpu = MakeEngine(spec, 16);
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->device_name().rfind("cuda:0 (", 0), 0u) << gpu->device_name();
  ASSERT_TRUE(gpu->LoadWeights(*InitWeights(spec, 1)).ok());
  const Dataset train = Synthetic(64, 1), test = Synthetic(48, 2);
  std::vector<uint32_t> batch(16);
  for (int step = 0; step < 4; ++step) {
    std::iota(batch.begin(), batch.end(), static_cast<uint32_t>(step * 16));
    EXPECT_TRUE(std::isfinite(gpu->TrainStep(train, batch, SgdConfig{}).loss_sum));
  }
  EXPECT_EQ(gpu->dataset_uploads(), 1);
  std::iota(batch.begin(), batch.end(), 0u);  // indices valid in both datasets
  EXPECT_EQ(gpu->EvalStep(test, batch).count, 16);
  EXPECT_EQ(gpu->dataset_uploads(), 2);
  gpu->TrainStep(train, batch, SgdConfig{});
  gpu->EvalStep(test, batch);
  EXPECT_EQ(gpu->dataset_uploads(), 2) << "both datasets stay cached";
  // A different Dataset object at a new address is a new upload.
  const Dataset copy = train;
  gpu->EvalStep(copy, batch);
  EXPECT_EQ(gpu->dataset_uploads(), 3);
  EXPECT_TRUE(gpu->status().ok()) << gpu->status();
}

TEST_F(CudaEngineTest, WeightsRoundTripAndLayoutIsChecked) {
  const ModelSpec spec = *ModelSpecByName("lenet");
  auto gpu = MakeEngine(spec, 4);
  ASSERT_NE(gpu, nullptr);
  const ModelWeights w = *InitWeights(spec, 9);
  ASSERT_TRUE(gpu->LoadWeights(w).ok());
  ModelWeights out = w.ZerosLike();
  ASSERT_TRUE(gpu->StoreWeights(&out).ok());
  EXPECT_TRUE(out == w);
  const ModelWeights other = *InitWeights(*ModelSpecByName("mlp"), 9);
  EXPECT_EQ(gpu->LoadWeights(other).code(), StatusCode::kInvalidArgument);
  ModelWeights wrong = other.ZerosLike();
  EXPECT_EQ(gpu->StoreWeights(&wrong).code(), StatusCode::kInvalidArgument);
}

// These run on every machine with the CUDA backend compiled, GPU or not: failures are Statuses.
TEST(CudaEngineErrorsTest, BadArgumentsAndMissingDevicesAreStatusesNotAborts) {
  const ModelSpec spec = *ModelSpecByName("mlp");
  auto zero = CreateCudaEngine(spec, 0, 0);
  EXPECT_EQ(zero.status().code(), StatusCode::kInvalidArgument);
  auto far = CreateCudaEngine(spec, 8, 99);
  ASSERT_FALSE(far.ok());
  if (QueryCuda().available()) {
    EXPECT_EQ(far.status().code(), StatusCode::kInvalidArgument) << far.status();
    EXPECT_NE(far.status().message().find("cuda:0 to cuda:"), std::string::npos) << far.status();
  } else {
    EXPECT_EQ(far.status().code(), StatusCode::kUnavailable) << far.status();
    EXPECT_NE(far.status().message().find(QueryCuda().unavailable_reason), std::string::npos)
        << far.status();
  }
}

TEST(CudaDeviceQueryTest, ExplainsInitFailuresInActionableWords) {
  const std::string old_driver = ExplainInitFailure(cudaErrorInsufficientDriver, 12020, 13000);
  EXPECT_NE(old_driver.find("too old"), std::string::npos) << old_driver;
  EXPECT_NE(old_driver.find("CUDA 12.2"), std::string::npos) << old_driver;
  EXPECT_NE(old_driver.find("CUDA 13.0"), std::string::npos) << old_driver;
  const std::string no_driver = ExplainInitFailure(cudaErrorInsufficientDriver, 0, 13000);
  EXPECT_NE(no_driver.find("no NVIDIA driver"), std::string::npos) << no_driver;
  const std::string no_gpu = ExplainInitFailure(cudaErrorNoDevice, 13000, 13000);
  EXPECT_NE(no_gpu.find("no CUDA-capable GPU"), std::string::npos) << no_gpu;
  EXPECT_NE(no_gpu.find("cudaErrorNoDevice"), std::string::npos) << no_gpu;
  const std::string other = ExplainInitFailure(cudaErrorUnknown, 13000, 13000);
  EXPECT_NE(other.find("failed to initialize"), std::string::npos) << other;
}

TEST(CudaDeviceQueryTest, QueryIsConsistent) {
  const CudaInfo& info = QueryCuda();
  EXPECT_TRUE(info.compiled);
  EXPECT_GE(info.runtime_version, 12000);
  EXPECT_EQ(info.device_names.size(), static_cast<size_t>(info.device_count));
  EXPECT_EQ(info.available(), info.unavailable_reason.empty()) << info.unavailable_reason;
}

}  // namespace
}  // namespace tributary::cuda
