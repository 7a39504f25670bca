// The CPU engine on several threads (train/cpu/cpu_engine.h): a batch split into shards gives the
// single-threaded gradients up to float rounding, the same bits every time for a seed and a thread
// count, batches smaller than the thread count, and predictions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "tests/core/sanitizers.h"
#include "tests/train/synthetic_images.h"
#include "train/cpu/cpu_engine.h"
#include "train/device.h"
#include "train/model_file.h"
#include "train/native_trainer.h"

namespace tributary {
namespace {

Dataset Synthetic(int64_t n, uint64_t seed, int64_t hw = 28) {
  return testing::SyntheticImages(n, seed, hw);
}

// Largest |a - b| over the buffers, relative to the largest |a|.
double RelativeMaxDiff(std::span<const float> a, std::span<const float> b) {
  double diff = 0.0, scale = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::fabs(a[i] - b[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(a[i])));
  }
  return diff / scale;
}

// Under ThreadSanitizer the cnn's cases (28 s of the pass) skip: their threads are the engine's
// shard workers, which the mlp and lenet cases run through the same code.
class ThreadedEngineTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (std::string(GetParam()) == "cnn") {
      TRIB_SKIP_UNDER_TSAN_BECAUSE(
          "the engine's shard threads are those of the mlp and lenet cases");
    }
  }
};

TEST_P(ThreadedEngineTest, ShardedGradientsMatchTheSingleThreadedOnes) {
  const ModelSpec spec = *ModelSpecByName(GetParam());
  const Dataset data = Synthetic(64, 5);
  std::vector<uint32_t> batch(37);  // not a multiple of 2 or 3: shards of unequal size
  std::iota(batch.begin(), batch.end(), 3u);
  auto one = *cpu::CpuEngine::Create(spec, 64, 1);
  ASSERT_TRUE(one->LoadWeights(*InitWeights(spec, 2)).ok());
  const StepStats want = one->ComputeGradients(data, batch);
  for (int threads : {2, 3}) {
    auto many = *cpu::CpuEngine::Create(spec, 64, threads);
    EXPECT_EQ(many->threads(), threads);
    ASSERT_TRUE(many->LoadWeights(*InitWeights(spec, 2)).ok());
    const StepStats got = many->ComputeGradients(data, batch);
    EXPECT_EQ(got.count, 37);
    EXPECT_EQ(got.correct, want.correct);
    EXPECT_NEAR(got.loss_sum, want.loss_sum, 1e-4 * want.loss_sum);
    EXPECT_LT(RelativeMaxDiff(one->grads(), many->grads()), 1e-5) << threads << " threads";
  }
}

TEST_P(ThreadedEngineTest, TrainingIsBitwiseDeterministicForASeedAndAThreadCount) {
  const ModelSpec spec = *ModelSpecByName(GetParam());
  const Dataset data = Synthetic(96, 7);
  FitConfig cfg;
  cfg.epochs = 1;
  cfg.batch_size = 32;
  cfg.lr = 0.05f;
  cfg.momentum = 0.9f;
  cfg.seed = 11;
  auto train = std::make_shared<const Dataset>(data);
  auto fit = [&](int threads) {
    auto t = *NativeTrainer::Create(spec, train, nullptr, 3, CpuEngineFactory(threads));
    return (*t->fit(*t->get_parameters(), cfg)).weights;
  };
  const ModelWeights a = fit(2), b = fit(2), single = fit(1);
  EXPECT_TRUE(std::equal(a.data().begin(), a.data().end(), b.data().begin()))
      << "two runs on 2 threads differ";
  // Another thread count is another (equally valid) rounding of the same steps.
  EXPECT_LT(RelativeMaxDiff(single.data(), a.data()), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Zoo, ThreadedEngineTest, ::testing::Values("mlp", "cnn", "lenet"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           return std::string(p.param);
                         });

// Dropout's masks are keyed by the sample's place in the whole batch, not in a thread's shard: a
// fit on 1, 2 and 3 threads drops the same values (so the weights differ only by rounding), two
// fits with one seed drop the same ones, and another fit seed drops others.
TEST(ThreadedEngineTest, DropoutDropsTheSameValuesOnEveryThreadCount) {
  const ModelSpec spec = *ParseModelToml(R"(
input = [28, 28, 1]
classes = 10
[[layers]]
type = "flatten"
[[layers]]
type = "dense"
units = 64
[[layers]]
type = "relu"
[[layers]]
type = "dropout"
rate = 0.5
[[layers]]
type = "dense"
)",
                                         "dropout_mlp");
  auto train = std::make_shared<const Dataset>(Synthetic(90, 8));
  FitConfig cfg;
  cfg.epochs = 1;
  cfg.batch_size = 45;
  cfg.lr = 0.1f;
  cfg.seed = 21;
  auto fit = [&](int threads, uint64_t seed) {
    cfg.seed = seed;
    auto t = *NativeTrainer::Create(spec, train, nullptr, 3, CpuEngineFactory(threads));
    return (*t->fit(*t->get_parameters(), cfg)).weights;
  };
  const ModelWeights one = fit(1, 21), again = fit(1, 21), other_seed = fit(1, 22);
  const ModelWeights start = *InitWeights(spec, 3);
  EXPECT_TRUE(std::equal(one.data().begin(), one.data().end(), again.data().begin()));
  for (int threads : {2, 3}) {
    const ModelWeights many = fit(threads, 21);
    EXPECT_LT(RelativeMaxDiff(one.data(), many.data()), 1e-5) << threads << " threads";
  }
  // Another mask moves the weights by about as much as the step itself; the same mask, not at all.
  std::vector<float> step(one.size()), moved(one.size());
  for (size_t i = 0; i < one.size(); ++i) {
    step[i] = one.data()[i] - start.data()[i];
    moved[i] = other_seed.data()[i] - start.data()[i];
  }
  EXPECT_GT(RelativeMaxDiff(step, moved), 0.1);
}

TEST(ThreadedEngineTest, ABatchSmallerThanTheThreadCountUsesOneShardPerSample) {
  const ModelSpec spec = *ModelSpecByName("mlp");
  const Dataset data = Synthetic(8, 3);
  auto one = *cpu::CpuEngine::Create(spec, 8, 1);
  auto four = *cpu::CpuEngine::Create(spec, 8, 4);
  ASSERT_TRUE(one->LoadWeights(*InitWeights(spec, 1)).ok());
  ASSERT_TRUE(four->LoadWeights(*InitWeights(spec, 1)).ok());
  const std::vector<uint32_t> single = {5};
  one->ComputeGradients(data, single);
  four->ComputeGradients(data, single);
  // One sample is one shard: the same computation as on one thread, bit for bit.
  EXPECT_TRUE(std::equal(one->grads().begin(), one->grads().end(), four->grads().begin()));
  const std::vector<uint32_t> three = {0, 1, 2};
  EXPECT_EQ(four->ComputeGradients(data, three).count, 3);
  one->ComputeGradients(data, three);
  EXPECT_LT(RelativeMaxDiff(one->grads(), four->grads()), 1e-5);
}

TEST(ThreadedEngineTest, MoreThreadsThanTheBatchAreCappedAndBadCountsRefused) {
  const ModelSpec spec = *ModelSpecByName("mlp");
  EXPECT_EQ((*cpu::CpuEngine::Create(spec, 2, 8))->threads(), 2);
  EXPECT_EQ(cpu::CpuEngine::Create(spec, 8, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cpu::CpuEngine::Create(spec, 8, 257).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolveCpuThreads(-1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ResolveCpuThreads(-1).status().message().find("train.threads"), std::string::npos);
  EXPECT_EQ(*ResolveCpuThreads(3), 3);
  EXPECT_GE(*ResolveCpuThreads(0), 1);
}

TEST(ThreadedEngineTest, PredictionsAreProbabilitiesThatAgreeAcrossThreadCounts) {
  const ModelSpec spec = *ModelSpecByName("cnn");
  const Dataset data = Synthetic(20, 4);
  auto one = *cpu::CpuEngine::Create(spec, 20, 1);
  auto two = *cpu::CpuEngine::Create(spec, 20, 2);
  ASSERT_TRUE(one->LoadWeights(*InitWeights(spec, 6)).ok());
  ASSERT_TRUE(two->LoadWeights(*InitWeights(spec, 6)).ok());
  std::vector<float> p1(20 * 10), p2(20 * 10);
  ASSERT_TRUE(one->Predict(data.images, p1).ok());
  ASSERT_TRUE(two->Predict(data.images, p2).ok());
  for (int i = 0; i < 20; ++i) {
    const float sum = std::accumulate(p1.begin() + i * 10, p1.begin() + (i + 1) * 10, 0.0f);
    EXPECT_NEAR(sum, 1.0f, 1e-5);
  }
  EXPECT_LT(RelativeMaxDiff(p1, p2), 1e-5);
  // Sizes that do not fit are refused, naming them.
  Status wrong = one->Predict(std::span<const float>(data.images).first(783), p1);
  EXPECT_EQ(wrong.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.message().find("783"), std::string::npos) << wrong;
  std::vector<float> small(10);
  EXPECT_EQ(one->Predict(std::span<const float>(data.images).first(784 * 2), small).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tributary
