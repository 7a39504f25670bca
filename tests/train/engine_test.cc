// The CPU engine end to end: whole-network gradients, the SGD update, determinism, and learning.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tests/train/grad_check.h"
#include "tests/train/synthetic_images.h"
#include "train/cpu/cpu_engine.h"
#include "train/device.h"
#include "train/model_file.h"
#include "train/native_trainer.h"
#include "train/sgd.h"

namespace tributary {
namespace {

Dataset Synthetic(int64_t n, uint64_t seed, int64_t hw = 28) {
  return testing::SyntheticImages(n, seed, hw);
}

class ModelGradTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ModelGradTest, WholeNetworkMatchesFiniteDifferences) {
  auto spec = *ModelSpecByName(GetParam());
  auto engine = *cpu::CpuEngine::Create(spec, 4);
  ASSERT_TRUE(engine->LoadWeights(*InitWeights(spec, 3)).ok());
  Dataset data = Synthetic(4, 9);
  std::vector<uint32_t> batch = {0, 1, 2, 3};
  StepStats st = engine->ComputeGradients(data, batch);
  EXPECT_EQ(st.count, 4);
  std::vector<float> analytic(engine->grads().begin(), engine->grads().end());
  std::vector<float> params(engine->params().begin(), engine->params().end());
  auto loss = [&]() {
    std::copy(params.begin(), params.end(), engine->params().begin());
    return engine->EvalStep(data, batch).loss_sum / 4.0;
  };
  EXPECT_LT(testing::WorstRelativeError(loss, params, analytic, 120, 77, 5e-3), 2e-2) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Zoo, ModelGradTest, ::testing::Values("mlp", "cnn", "lenet"));

// Residual connections through the whole engine: a convolutional block's output added to the
// block's input, a dense block's to its input, and an add whose source is itself an add's output,
// on 1 and 3 threads: the gradients are the finite differences' (without the gradient a connection
// carries back, its source's layers would miss a term).
TEST(ModelGradTest, ResidualConnectionsMatchFiniteDifferences) {
  const ModelSpec spec = *ParseModelToml(R"(
input = [8, 8, 1]
classes = 10
layers = [
  { type = "conv2d", filters = 3, kernel = 3, padding = 1 },
  { type = "tanh" },
  { type = "conv2d", filters = 3, kernel = 3, padding = 1 },
  { type = "tanh" },
  { type = "add", from = 1 },
  { type = "avgpool2d", size = 2 },
  { type = "flatten" },
  { type = "dense", units = 12 },
  { type = "tanh" },
  { type = "dense", units = 12 },
  { type = "sigmoid" },
  { type = "add", from = 8 },
  { type = "dense", units = 12 },
  { type = "add", from = 11 },
  { type = "dense" },
]
)",
                                         "residual");
  Dataset data = Synthetic(6, 9, 8);
  std::vector<uint32_t> batch = {0, 1, 2, 3, 4, 5};
  for (int threads : {1, 3}) {
    SCOPED_TRACE(threads);
    auto engine = *cpu::CpuEngine::Create(spec, 6, threads);
    ASSERT_TRUE(engine->LoadWeights(*InitWeights(spec, 3)).ok());
    engine->ComputeGradients(data, batch);
    std::vector<float> analytic(engine->grads().begin(), engine->grads().end());
    std::vector<float> params(engine->params().begin(), engine->params().end());
    auto loss = [&]() {
      std::copy(params.begin(), params.end(), engine->params().begin());
      return engine->EvalStep(data, batch).loss_sum / 6.0;
    };
    EXPECT_LT(testing::WorstRelativeError(loss, params, analytic, 200, 78, 5e-3), 1e-2);
  }
}

TEST(SgdTest, MatchesHandComputedSteps) {
  // w=1, grad=0.5, wd=0.1, mu=0.2, anchor=0.5, lr=0.1, momentum=0.9.
  float w = 1.0f, g = 0.5f, v = 0.0f, anchor = 0.5f;
  SgdConfig cfg{0.1f, 0.9f, 0.1f, 0.2f};
  SgdUpdate(&w, &g, &v, &anchor, 1, cfg);
  // g' = 0.5 + 0.1*1 + 0.2*(1-0.5) = 0.7; v = 0.7; w = 1 - 0.07 = 0.93
  EXPECT_NEAR(v, 0.7f, 1e-6);
  EXPECT_NEAR(w, 0.93f, 1e-6);
  SgdUpdate(&w, &g, &v, &anchor, 1, cfg);
  // g' = 0.5 + 0.093 + 0.2*0.43 = 0.679; v = 0.9*0.7 + 0.679 = 1.309; w = 0.93 - 0.1309 = 0.7991
  EXPECT_NEAR(v, 1.309f, 1e-5);
  EXPECT_NEAR(w, 0.7991f, 1e-5);
  float plain = 1.0f;
  SgdUpdate(&plain, &g, nullptr, nullptr, 1, SgdConfig{0.1f, 0.0f, 0.0f, 0.0f});
  EXPECT_NEAR(plain, 0.95f, 1e-7);
}

// SCAFFOLD's correction is subtracted times lr after the step and never enters the momentum.
TEST(SgdTest, AdamAndAdamWMatchHandComputedSteps) {
  // w = 1, grad = 0.5, lr = 0.1, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, wd = 0.1.
  SgdConfig adam{0.1f, 0.0f, 0.1f, 0.0f};
  adam.optimizer = OptimizerKind::kAdam;
  float w = 1.0f, g = 0.5f, m = 0.0f, v = 0.0f;
  AdamUpdate(&w, &g, &m, &v, nullptr, 1, adam, 1);
  // Adam adds wd * w to the gradient: g' = 0.6; m = 0.06, v = 0.00036; m^ = 0.6, v^ = 0.36:
  // w = 1 - 0.1 * 0.6 / (0.6 + 1e-8).
  EXPECT_NEAR(m, 0.06f, 1e-7);
  EXPECT_NEAR(v, 0.00036f, 1e-8);  // (1 - beta2) in float: 0.999f is not 0.999
  EXPECT_NEAR(w, 1.0 - 0.1 * 0.6 / (0.6 + 1e-8), 1e-7);
  const double w1 = w;
  AdamUpdate(&w, &g, &m, &v, nullptr, 1, adam, 2);
  {
    const double gg = 0.5 + 0.1 * w1, mm = 0.9 * 0.06 + 0.1 * gg,
                 vv = 0.999 * 0.00036 + 0.001 * gg * gg;
    const double want =
        w1 - 0.1 / (1 - 0.81) * mm / (std::sqrt(vv) / std::sqrt(1 - 0.998001) + 1e-8);
    EXPECT_NEAR(m, mm, 1e-7);
    EXPECT_NEAR(w, want, 1e-6);
  }
  // AdamW decays the weight instead (w *= 1 - lr * wd) and keeps it out of the moments.
  SgdConfig adamw = adam;
  adamw.optimizer = OptimizerKind::kAdamW;
  w = 1.0f, m = 0.0f, v = 0.0f;
  AdamUpdate(&w, &g, &m, &v, nullptr, 1, adamw, 1);
  EXPECT_NEAR(m, 0.05f, 1e-7);
  EXPECT_NEAR(w, 0.99 - 0.1 * 0.5 / (0.5 + 1e-8), 1e-7);
  // OptimizerOf reads a FitConfig, and names a bad optimizer.
  FitConfig fit;
  fit.optimizer = "adamw";
  fit.beta1 = 0.8f;
  ASSERT_TRUE(OptimizerOf(fit).ok());
  EXPECT_EQ(OptimizerOf(fit)->optimizer, OptimizerKind::kAdamW);
  EXPECT_EQ(OptimizerOf(fit)->beta1, 0.8f);
  fit.optimizer = "lion";
  EXPECT_NE(OptimizerOf(fit).status().message().find("'lion' is not one of sgd, adam, adamw"),
            std::string::npos);
}

// A fit with Adam restarts its state (as momentum's) each fit: two fits from the same weights give
// the same bits, and Adam trains the synthetic data as SGD does.
TEST(NativeTrainerTest, AdamStateStartsAgainEveryFit) {
  const ModelSpec spec = *ModelSpecByName("mlp", {8, 8, 1});
  auto data = std::make_shared<Dataset>(testing::SyntheticImages(256, 9, 8));
  auto t = *NativeTrainer::Create(spec, data, nullptr, 1);
  FitConfig fit;
  fit.epochs = 2;
  fit.batch_size = 32;
  fit.lr = 0.005f;
  fit.optimizer = "adam";
  const ModelWeights start = *t->get_parameters();
  Result<FitResult> a = t->fit(start, fit);
  Result<FitResult> b = t->fit(start, fit);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  EXPECT_EQ(a->weights.content_hash(), b->weights.content_hash());
  EXPECT_NE(a->weights.content_hash(), start.content_hash());
  EXPECT_LT(a->metrics.at("train_loss"), 1.5);
}

// A frozen layer (fine-tuning the layers after it): over a fit with momentum and weight decay, on
// two threads, its tensors keep their bits and every other tensor moves; after one step the
// others are exactly the unfrozen model's (the gradient reaching them is the same). With Adam too.
TEST(NativeTrainerTest, AFrozenLayerKeepsItsBitsAndTheRestTrains) {
  ModelSpec frozen = *ModelSpecByName("mlp", {8, 8, 1});
  for (LayerSpec& l : frozen.layers) {
    if (l.name == "fc1") l.frozen = true;
  }
  const ModelSpec whole = *ModelSpecByName("mlp", {8, 8, 1});
  EXPECT_EQ(TrainableRanges(whole)->size(), 1u);
  const auto ranges = *TrainableRanges(frozen);
  ASSERT_EQ(ranges.size(), 1u);
  EXPECT_EQ(ranges[0].first, 200 * 64 + 200);  // fc1's weight and bias come first
  auto data = std::make_shared<Dataset>(testing::SyntheticImages(96, 13, 8));
  for (const char* optimizer : {"sgd", "adam"}) {
    FitConfig fit;
    fit.epochs = 2;
    fit.batch_size = 32;
    fit.lr = std::string(optimizer) == "sgd" ? 0.05f : 0.005f;
    fit.momentum = std::string(optimizer) == "sgd" ? 0.9f : 0.0f;
    fit.weight_decay = 0.01f;
    fit.optimizer = optimizer;
    auto t = *NativeTrainer::Create(frozen, data, nullptr, 1, CpuEngineFactory(2));
    const ModelWeights start = *t->get_parameters();
    Result<FitResult> r = t->fit(start, fit);
    ASSERT_TRUE(r.ok()) << r.status();
    for (size_t i = 0; i < start.num_tensors(); ++i) {
      const auto& info = start.tensors()[i];
      const bool same = std::equal(r->weights.tensor(i).begin(), r->weights.tensor(i).end(),
                                   start.tensor(i).begin());
      EXPECT_EQ(same, info.name.starts_with("fc1.")) << optimizer << " " << info.name;
    }
    FitConfig one = fit;
    one.epochs = 1;
    one.max_steps = 1;
    auto u = *NativeTrainer::Create(whole, data, nullptr, 1, CpuEngineFactory(2));
    auto f = *NativeTrainer::Create(frozen, data, nullptr, 1, CpuEngineFactory(2));
    const ModelWeights a = u->fit(start, one)->weights, b = f->fit(start, one)->weights;
    for (size_t i = 2; i < start.num_tensors(); ++i)
      EXPECT_TRUE(std::equal(a.tensor(i).begin(), a.tensor(i).end(), b.tensor(i).begin()))
          << optimizer << " " << start.tensors()[i].name;
  }
}

// optimizer_state = "keep": two fits of one full-batch epoch each are one fit of two epochs (Adam's
// moments and step count carry over, and so does SGD's momentum), also with an evaluation in a
// larger batch between them; "reset" starts again and differs. Each fit shuffles its one batch
// anew, which reorders the gradient's sums: equal within 1e-6, not bitwise.
TEST(NativeTrainerTest, AKeptOptimizerStateRunsOnAcrossFits) {
  const ModelSpec spec = *ModelSpecByName("mlp", {8, 8, 1});
  auto data = std::make_shared<Dataset>(testing::SyntheticImages(64, 12, 8));
  auto max_diff = [](const ModelWeights& a, const ModelWeights& b) {
    double d = 0.0;
    for (size_t i = 0; i < a.size(); ++i)
      d = std::max(d, static_cast<double>(std::fabs(a.data()[i] - b.data()[i])));
    return d;
  };
  for (const char* optimizer : {"adam", "sgd"}) {
    SCOPED_TRACE(optimizer);
    const bool adam = std::string(optimizer) == "adam";
    FitConfig fit;
    fit.batch_size = 64;  // one batch per epoch
    fit.lr = adam ? 0.01f : 0.1f;
    fit.momentum = adam ? 0.0f : 0.9f;
    fit.optimizer = optimizer;
    auto whole = *NativeTrainer::Create(spec, data, data, 1);
    const ModelWeights start = *whole->get_parameters();
    FitConfig two = fit;
    two.epochs = 2;
    const ModelWeights want = whole->fit(start, two)->weights;

    fit.optimizer_state = "keep";
    auto kept = *NativeTrainer::Create(spec, data, data, 1);
    const ModelWeights first = kept->fit(start, fit)->weights;
    EvalConfig eval;
    eval.batch_size = 256;  // larger than the training engine's batch
    ASSERT_TRUE(kept->evaluate(first, eval).ok());
    const double kept_diff = max_diff(kept->fit(first, fit)->weights, want);
    EXPECT_LT(kept_diff, 1e-6);

    fit.optimizer_state = "reset";
    auto reset = *NativeTrainer::Create(spec, data, data, 1);
    const ModelWeights again = reset->fit(start, fit)->weights;
    const double reset_diff = max_diff(reset->fit(again, fit)->weights, want);
    std::printf("%s: two kept fits vs one of two epochs %.3g, two reset fits %.3g\n", optimizer,
                kept_diff, reset_diff);
    EXPECT_GT(reset_diff, 1e-3);
    fit.optimizer_state = "forever";
    EXPECT_EQ(reset->fit(again, fit).status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(SgdTest, TheScaffoldCorrectionStaysOutOfTheMomentum) {
  // w=1, grad=0.5, lr=0.1, momentum=0.9, correction=0.3.
  float w = 1.0f, g = 0.5f, v = 0.0f, corr = 0.3f;
  const SgdConfig cfg{0.1f, 0.9f, 0.0f, 0.0f};
  SgdUpdate(&w, &g, &v, nullptr, 1, cfg, &corr);
  // v = 0.5; w = 1 - 0.05 - 0.03 = 0.92
  EXPECT_NEAR(v, 0.5f, 1e-7);
  EXPECT_NEAR(w, 0.92f, 1e-6);
  SgdUpdate(&w, &g, &v, nullptr, 1, cfg, &corr);
  // v = 0.45 + 0.5 = 0.95; w = 0.92 - 0.095 - 0.03 = 0.795
  EXPECT_NEAR(v, 0.95f, 1e-6);
  EXPECT_NEAR(w, 0.795f, 1e-6);
}

// The engine applies the correction it was given after every step of a fit: with a zero
// correction the fit is bitwise the plain one; with correction c, every step takes lr * c more,
// and LoadWeights clears it. Gradients depend on the weights, so the two runs are compared on a
// model whose loss does not move much in 3 steps: the difference is close to steps * lr * c.
TEST(NativeTrainerTest, FitAppliesTheScaffoldCorrectionAtEveryStep) {
  auto data = std::make_shared<Dataset>(Synthetic(96, 3));
  auto spec = *ModelSpecByName("mlp");
  auto t = *NativeTrainer::Create(spec, data, nullptr, 2);
  EXPECT_TRUE(t->applies_correction());
  const ModelWeights w0 = *t->get_parameters();
  FitConfig cfg;
  cfg.batch_size = 32;  // 3 steps
  cfg.lr = 1e-4f;
  cfg.seed = 4;
  FitResult plain = *t->fit(w0, cfg);
  EXPECT_EQ(plain.steps, 3);
  const std::vector<float> zeros(w0.size(), 0.0f);
  cfg.correction = zeros;
  EXPECT_EQ(t->fit(w0, cfg)->weights.content_hash(), plain.weights.content_hash());
  const std::vector<float> c(w0.size(), 2.0f);
  cfg.correction = c;
  FitResult corrected = *t->fit(w0, cfg);
  double mean_shift = 0.0;
  for (size_t i = 0; i < w0.size(); ++i)
    mean_shift += plain.weights.data()[i] - corrected.weights.data()[i];
  mean_shift /= static_cast<double>(w0.size());
  EXPECT_NEAR(mean_shift, 3 * 1e-4 * 2.0, 1e-6);
  // The correction was for that fit only.
  cfg.correction = {};
  EXPECT_EQ(t->fit(w0, cfg)->weights.content_hash(), plain.weights.content_hash());
  // One of another size is refused, naming both sizes.
  const std::vector<float> short_one(5, 1.0f);
  cfg.correction = short_one;
  Result<FitResult> refused = t->fit(w0, cfg);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("5 values"), std::string::npos)
      << refused.status().message();
}

TEST(NativeTrainerTest, LearnsSyntheticDataToStatedAccuracy) {
  auto train = std::make_shared<Dataset>(Synthetic(2000, 1));
  auto test = std::make_shared<Dataset>(Synthetic(500, 2));
  // Same prototypes for train and test: the generator seeds prototypes from the spec seed, so use
  // a split of one data set instead.
  Dataset all = Synthetic(2500, 1);
  std::vector<uint32_t> tr(2000), te(500);
  std::iota(tr.begin(), tr.end(), 0u);
  std::iota(te.begin(), te.end(), 2000u);
  train = std::make_shared<Dataset>(all.Subset(tr));
  test = std::make_shared<Dataset>(all.Subset(te));
  auto spec = *ModelSpecByName("mlp");
  auto trainer = *NativeTrainer::Create(spec, train, test, 7);
  auto w0 = *trainer->get_parameters();
  auto before = *trainer->evaluate(w0, {});
  EXPECT_LT(before.accuracy, 0.3);  // chance is 0.1
  FitConfig cfg;
  cfg.epochs = 2;
  cfg.batch_size = 32;
  cfg.lr = 0.05f;
  auto fit = trainer->fit(w0, cfg);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_EQ(fit->num_examples, 2000);
  auto after = *trainer->evaluate(fit->weights, {});
  EXPECT_GE(after.accuracy, 0.95) << "loss " << after.loss;
  EXPECT_LT(after.loss, before.loss / 4);
}

TEST(NativeTrainerTest, DeterministicForASeed) {
  auto data = std::make_shared<Dataset>(Synthetic(300, 4));
  auto spec = *ModelSpecByName("lenet");
  auto a = *NativeTrainer::Create(spec, data, nullptr, 5);
  auto b = *NativeTrainer::Create(spec, data, nullptr, 5);
  auto w0 = *a->get_parameters();
  EXPECT_EQ(w0, *b->get_parameters());
  FitConfig cfg;
  cfg.seed = 11;
  cfg.momentum = 0.9f;
  cfg.max_steps = 5;
  auto ra = *a->fit(w0, cfg);
  auto rb = *b->fit(w0, cfg);
  EXPECT_EQ(ra.weights.content_hash(), rb.weights.content_hash());
  EXPECT_FALSE(ra.weights == w0);
  cfg.seed = 12;
  auto rc = *b->fit(w0, cfg);
  EXPECT_NE(ra.weights.content_hash(), rc.weights.content_hash());
}

TEST(NativeTrainerTest, AStopRequestedDuringAFitEndsItAtTheNextBatchAndKeepsTheWeights) {
  auto data = std::make_shared<Dataset>(Synthetic(256, 8));
  auto spec = *ModelSpecByName("mlp");
  auto t = *NativeTrainer::Create(spec, data, nullptr, 1);
  const ModelWeights w0 = *t->get_parameters();
  std::stop_source stop;
  int epochs_seen = 0;
  // The stop comes after the first epoch (8 batches of 32): the second epoch's first batch is
  // never trained.
  t->set_epoch_callback([&](const EpochReport&) {
    ++epochs_seen;
    stop.request_stop();
  });
  FitConfig cfg;
  cfg.epochs = 5;
  cfg.batch_size = 32;
  cfg.stop = stop.get_token();
  Result<FitResult> r = t->fit(w0, cfg);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kAborted) << r.status();
  EXPECT_NE(r.status().message().find("after 8 steps"), std::string::npos) << r.status();
  EXPECT_EQ(epochs_seen, 1);
  EXPECT_EQ(t->get_parameters()->content_hash(), w0.content_hash());

  // Requested before the call: no batch at all. Without a request (the default token) the same
  // fit runs to the end.
  epochs_seen = 0;
  Result<FitResult> none = t->fit(w0, cfg);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("after 0 steps"), std::string::npos) << none.status();
  EXPECT_EQ(epochs_seen, 0);
  t->set_epoch_callback(nullptr);
  cfg.stop = {};
  ASSERT_TRUE(t->fit(w0, cfg).ok());
}

TEST(NativeTrainerTest, ProximalTermPullsTowardGlobal) {
  auto data = std::make_shared<Dataset>(Synthetic(256, 8));
  auto spec = *ModelSpecByName("mlp");
  auto t = *NativeTrainer::Create(spec, data, nullptr, 1);
  auto w0 = *t->get_parameters();
  auto dist = [&](const ModelWeights& w) {
    double d = 0;
    for (size_t i = 0; i < w.size(); ++i) d += std::pow(w.data()[i] - w0.data()[i], 2);
    return std::sqrt(d);
  };
  FitConfig cfg;
  cfg.epochs = 3;
  cfg.lr = 0.1f;
  const double free_dist = dist(t->fit(w0, cfg)->weights);
  cfg.proximal_mu = 5.0f;
  const double prox_dist = dist(t->fit(w0, cfg)->weights);
  EXPECT_LT(prox_dist, 0.7 * free_dist) << free_dist << " vs " << prox_dist;
}

TEST(NativeTrainerTest, RejectsBadInput) {
  auto data = std::make_shared<Dataset>(Synthetic(10, 1, 8));
  auto spec = *ModelSpecByName("mlp");
  auto bad = NativeTrainer::Create(spec, data, nullptr, 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("expects 784"), std::string::npos) << bad.status();
  auto good = std::make_shared<Dataset>(Synthetic(10, 1));
  auto t = *NativeTrainer::Create(spec, good, nullptr, 1);
  FitConfig cfg;
  cfg.lr = -1;
  EXPECT_EQ(t->fit(*t->get_parameters(), cfg).status().code(), StatusCode::kInvalidArgument);
  auto other = *InitWeights(*ModelSpecByName("lenet"), 1);
  EXPECT_EQ(t->fit(other, FitConfig{}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t->evaluate(*t->get_parameters(), {}).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ModelSpecByName("resnet").status().code(), StatusCode::kInvalidArgument);
}

// Sequences of 12 token ids (vocabulary 20) whose class k draws its tokens from 5k .. 5k+4, with a
// quarter of the positions noise from the whole vocabulary: an embedding averaged over the
// positions tells them apart. Token ids outside the vocabulary, or not integers, are refused by
// name before any training.
Dataset TokenSequences(int64_t n, uint64_t seed) {
  Dataset d;
  d.name = "tokens";
  d.height = 12;
  d.width = d.channels = 1;
  d.num_classes = 4;
  Rng rng(seed);
  for (int64_t i = 0; i < n; ++i) {
    const int k = static_cast<int>(rng.UniformInt(4));
    d.labels.push_back(static_cast<uint8_t>(k));
    for (int p = 0; p < 12; ++p)
      d.images.push_back(static_cast<float>(rng.UniformInt(4) == 0 ? rng.UniformInt(20)
                                                                   : 5 * k + rng.UniformInt(5)));
  }
  return d;
}

TEST(NativeTrainerTest, AnEmbeddingLearnsWhichTokensASequenceHoldsAndRefusesOtherIds) {
  Result<ModelSpec> spec = ParseModelToml(R"(layers = [
  { type = "embedding", vocab = 20, dim = 8 },
  { type = "globalavgpool" },
  { type = "dense" },
])",
                                          "tokens.toml", {12, 1, 1}, 4);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->layers[0].name, "embed1");
  auto train = std::make_shared<Dataset>(TokenSequences(600, 71));
  auto test = std::make_shared<Dataset>(TokenSequences(200, 72));
  auto trainer = *NativeTrainer::Create(*spec, train, test, 7, CpuEngineFactory(2));
  const ModelWeights w0 = *trainer->get_parameters();
  EXPECT_EQ(w0.tensors()[0].name, "embed1.weight");
  const double before = trainer->evaluate(w0, {})->accuracy;
  FitConfig cfg;
  cfg.epochs = 3;
  cfg.batch_size = 16;
  cfg.lr = 0.1f;
  cfg.momentum = 0.9f;
  Result<FitResult> fit = trainer->fit(w0, cfg);
  ASSERT_TRUE(fit.ok()) << fit.status();
  const double after = trainer->evaluate(fit->weights, {})->accuracy;
  EXPECT_LT(before, 0.5);
  EXPECT_GT(after, 0.9) << "before " << before;
  // predict takes token ids too.
  std::vector<float> one(test->images.begin(), test->images.begin() + 12);
  EXPECT_TRUE(trainer->predict(fit->weights, one, 1).ok());
  one[7] = 20.0f;
  Status refused = trainer->predict(fit->weights, one, 1).status();
  EXPECT_EQ(refused.message(),
            "predict: sample 0, position 7 holds 20, not a token id of model tokens's embedding (0 "
            "to 19)");
  for (float bad : {-1.0f, 3.5f, std::nanf("")}) {
    Dataset odd = TokenSequences(10, 73);
    odd.images[37] = bad;
    Result<std::unique_ptr<NativeTrainer>> t =
        NativeTrainer::Create(*spec, std::make_shared<Dataset>(odd), nullptr, 7);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_NE(t.status().message().find("dataset tokens: sample 3, position 1 holds"),
              std::string::npos)
        << t.status();
  }
}

// The same sequences read in order by an LSTM (the class is spread over the steps: its last state
// must have gathered it), on 1 thread and on 2 (each sample's steps on one shard).
TEST(NativeTrainerTest, AnLstmLearnsTheSequencesOnOneAndTwoThreads) {
  Result<ModelSpec> spec = ParseModelToml(R"(layers = [
  { type = "embedding", vocab = 20, dim = 8 },
  { type = "lstm", units = 16 },
  { type = "dense" },
])",
                                          "recurrent.toml", {12, 1, 1}, 4);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->layers[1].name, "lstm1");
  auto train = std::make_shared<Dataset>(TokenSequences(600, 74));
  auto test = std::make_shared<Dataset>(TokenSequences(200, 75));
  FitConfig cfg;
  cfg.epochs = 4;
  cfg.batch_size = 16;
  cfg.lr = 0.01f;
  cfg.momentum = 0.0f;
  cfg.optimizer = "adam";
  for (int threads : {1, 2}) {
    auto trainer = *NativeTrainer::Create(*spec, train, test, 7, CpuEngineFactory(threads));
    const ModelWeights w0 = *trainer->get_parameters();
    const double before = trainer->evaluate(w0, {})->accuracy;
    Result<FitResult> fit = trainer->fit(w0, cfg);
    ASSERT_TRUE(fit.ok()) << fit.status();
    const double after = trainer->evaluate(fit->weights, {})->accuracy;
    EXPECT_LT(before, 0.5) << threads;
    EXPECT_GT(after, 0.9) << threads << " threads, before " << before;
  }
}

TEST(ModelSpecTest, ZooShapesAndParameterCounts) {
  auto mlp = *ModelSpecByName("mlp");
  EXPECT_EQ(InitWeights(mlp, 0)->size(), 784u * 200 + 200 + 200 * 200 + 200 + 200 * 10 + 10);
  auto cnn = *ModelSpecByName("cnn");
  // conv1 32*25+32, conv2 64*25*32+64, fc1 3136*512+512, fc2 512*10+10 (FedAvg paper: 1,663,370)
  EXPECT_EQ(InitWeights(cnn, 0)->size(), 1663370u);
  auto lenet = *ModelSpecByName("lenet");
  EXPECT_EQ(InitWeights(lenet, 0)->size(),
            6u * 25 + 6 + 16 * 25 * 6 + 16 + 400 * 120 + 120 + 120 * 84 + 84 + 84 * 10 + 10);
  EXPECT_EQ(ForwardFlopsPerSample(mlp), 2 * (784 * 200 + 200 * 200 + 200 * 10));
  auto w = *InitWeights(mlp, 0);
  const TensorInfo* fc1 = w.find("fc1.weight");
  ASSERT_NE(fc1, nullptr);
  EXPECT_EQ(fc1->shape, (std::vector<int64_t>{200, 784}));
  const float bound = 1.0f / std::sqrt(784.0f);
  for (float v : w.tensor(0)) ASSERT_LE(std::abs(v), bound);
}

}  // namespace
}  // namespace tributary
