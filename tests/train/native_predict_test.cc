// NativeTrainer::predict: class probabilities from the CPU engine, consistent with evaluate().
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "train/data/synthetic.h"
#include "train/native_trainer.h"

namespace tributary {
namespace {

// A train/eval split of one synthetic set (the classes' prototypes come from the seed).
struct Split {
  std::shared_ptr<const Dataset> train, eval;
};

Split MakeSplit(int64_t n_train, int64_t n_eval) {
  SyntheticSpec s;
  s.n = n_train + n_eval;
  s.height = 28;
  s.width = 28;
  s.seed = 3;
  s.block = 4;
  const Dataset all = MakeSyntheticDataset(s);
  std::vector<uint32_t> tr(static_cast<size_t>(n_train)), ev(static_cast<size_t>(n_eval));
  std::iota(tr.begin(), tr.end(), 0u);
  std::iota(ev.begin(), ev.end(), static_cast<uint32_t>(n_train));
  return {std::make_shared<Dataset>(all.Subset(tr)), std::make_shared<Dataset>(all.Subset(ev))};
}

class NativePredictZooTest : public ::testing::TestWithParam<const char*> {};

// Rows of probabilities whose argmax agrees with evaluate()'s accuracy, on weights part-way through
// training, over more samples than one predict batch (256).
TEST_P(NativePredictZooTest, RowsSumToOneAndTheirArgmaxGivesEvaluatesAccuracy) {
  const Split data = MakeSplit(256, 300);
  auto spec = *ModelSpecByName(GetParam());
  auto trainer = *NativeTrainer::Create(spec, data.train, data.eval, 7);
  FitConfig cfg;
  cfg.lr = 0.1f;
  cfg.max_steps = 16;
  cfg.momentum = 0.9f;
  Result<FitResult> fit = trainer->fit(*trainer->get_parameters(), cfg);
  ASSERT_TRUE(fit.ok()) << fit.status();
  const ModelWeights& w = fit->weights;

  const Dataset& eval = *data.eval;
  const int64_t n = eval.size();
  Result<std::vector<float>> probs = trainer->predict(w, eval.images, n);
  ASSERT_TRUE(probs.ok()) << probs.status();
  const int k = spec.num_classes;
  ASSERT_EQ(probs->size(), static_cast<size_t>(n * k));
  int64_t correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* row = probs->data() + i * k;
    double sum = 0.0;
    for (int c = 0; c < k; ++c) {
      EXPECT_GE(row[c], 0.0f) << "sample " << i;
      EXPECT_LE(row[c], 1.0f) << "sample " << i;
      sum += row[c];
    }
    EXPECT_NEAR(sum, 1.0, 1e-5) << "sample " << i;
    if (std::max_element(row, row + k) - row == eval.labels[static_cast<size_t>(i)]) ++correct;
  }
  Result<EvalResult> ev = trainer->evaluate(w, {});
  ASSERT_TRUE(ev.ok()) << ev.status();
  ASSERT_EQ(ev->num_examples, n);
  EXPECT_EQ(correct, static_cast<int64_t>(std::llround(ev->accuracy * static_cast<double>(n))));
  // Weights part-way through training (mlp gets 233 of the 300 right, lenet, slower to start, 31),
  // so the comparison covers both right and wrong answers.
  EXPECT_GT(correct, 0);
  EXPECT_LT(correct, n);

  // Sample by sample, the same rows: a sample's outputs do not depend on its batch.
  const int64_t ss = eval.sample_size();
  for (int64_t i : {int64_t{0}, int64_t{255}, int64_t{256}, n - 1}) {
    Result<std::vector<float>> one = trainer->predict(
        w, std::span<const float>(eval.images).subspan(static_cast<size_t>(i * ss), ss), 1);
    ASSERT_TRUE(one.ok()) << one.status();
    for (int c = 0; c < k; ++c) EXPECT_NEAR((*one)[c], (*probs)[i * k + c], 1e-6) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, NativePredictZooTest, ::testing::Values("mlp", "lenet"));

TEST(NativePredictTest, NeedsNoEvaluationSetAndRejectsInputsOfTheWrongSize) {
  const Split data = MakeSplit(16, 4);
  auto spec = *ModelSpecByName("mlp");
  auto trainer = *NativeTrainer::Create(spec, data.train, nullptr, 1);
  const ModelWeights w = *trainer->get_parameters();
  const std::vector<float>& x = data.eval->images;  // 4 samples of 784 values
  ASSERT_TRUE(trainer->predict(w, x, 4).ok());

  Result<std::vector<float>> r =
      trainer->predict(w, std::span<const float>(x).first(4 * 784 - 1), 4);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("takes 784 values per sample"), std::string::npos)
      << r.status();
  EXPECT_EQ(trainer->predict(w, x, 3).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(trainer->predict(w, x, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(trainer->predict(w, {}, 1).status().code(), StatusCode::kInvalidArgument);
  auto other = *InitWeights(*ModelSpecByName("lenet"), 1);
  EXPECT_EQ(trainer->predict(other, x, 4).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tributary
