// The native training API: CreateNativeTrainer (C++) trains exactly as the engine's own
// NativeTrainer does on the same samples, refuses bad arrays and models by name, and the C API's
// client (native_c_client.c) sends the update that NativeTrainer computes, over mutual TLS.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <future>
#include <string>
#include <vector>

#include "compression/codec.h"
#include "tests/client/tls_fixture.h"
#include "tests/native/native_c_client.h"
#include "train/data/dataset.h"
#include "train/device.h"
#include "train/model_file.h"
#include "train/native_trainer.h"
#include "tributary/native_c_api.h"
#include "tributary/native_training.h"

namespace tributary {
namespace {

using namespace tributary::testing;
using namespace std::chrono_literals;

// examples/native_app/patterns_cnn.toml's model: conv 3x3x8, relu, pool, dense; 1,370 parameters.
constexpr const char* kModel = R"(
name = "patterns_cnn"
input = [8, 8, 1]
classes = 10
[[layers]]
type = "conv2d"
filters = 8
kernel = 3
padding = 1
[[layers]]
type = "relu"
[[layers]]
type = "maxpool2d"
size = 2
[[layers]]
type = "flatten"
[[layers]]
type = "dense"
)";
constexpr size_t kModelParameters = 3 * 3 * 8 + 8 + 4 * 4 * 8 * 10 + 10;

// n 8x8 samples of 10 classes: a class pattern plus a deterministic jitter.
SampleArrays Samples(size_t n, uint32_t seed) {
  SampleArrays a;
  a.height = 8;
  a.width = 8;
  a.num_classes = 10;
  uint32_t s = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    const int k = static_cast<int>((s >> 16) % 10);
    a.labels.push_back(static_cast<uint8_t>(k));
    for (int p = 0; p < 64; ++p) {
      s = s * 1664525u + 1013904223u;
      const float jitter = static_cast<float>((s >> 8) & 0xFF) / 255.0f - 0.5f;
      a.features.push_back(static_cast<float>((k * 7 + p * 3) % 11) / 10.0f + 0.3f * jitter);
    }
  }
  return a;
}

std::shared_ptr<const Dataset> AsDataset(const SampleArrays& a) {
  auto d = std::make_shared<Dataset>();
  d->name = "reference";
  d->height = a.height;
  d->width = a.width;
  d->channels = a.channels;
  d->num_classes = a.num_classes;
  d->images = a.features;
  d->labels = a.labels;
  return d;
}

FitConfig TwoEpochs() {
  FitConfig cfg;
  cfg.epochs = 2;
  cfg.batch_size = 16;
  cfg.lr = 0.05f;
  cfg.momentum = 0.9f;
  cfg.seed = 11;
  return cfg;
}

TEST(NativeTrainingTest, TrainsBitForBitLikeTheEnginesOwnTrainer) {
  const SampleArrays train = Samples(200, 1), eval = Samples(100, 2);
  NativeTrainingOptions o;
  o.model = "patterns";
  o.model_toml = kModel;
  o.threads = 2;
  std::vector<NativeEpochProgress> progress;
  o.on_epoch = [&](const NativeEpochProgress& p) { progress.push_back(p); };
  Result<std::unique_ptr<Trainer>> trainer = CreateNativeTrainer(o, train, eval);
  ASSERT_TRUE(trainer.ok()) << trainer.status();

  Result<ModelSpec> spec = ParseModelToml(kModel, "patterns");
  ASSERT_TRUE(spec.ok()) << spec.status();
  Result<std::unique_ptr<NativeTrainer>> reference =
      NativeTrainer::Create(*spec, AsDataset(train), AsDataset(eval), 0, CpuEngineFactory(2));
  ASSERT_TRUE(reference.ok()) << reference.status();

  const ModelWeights global = *(*reference)->get_parameters();
  EXPECT_EQ(global.size(), kModelParameters);
  EXPECT_EQ(*(*trainer)->get_parameters(), global);  // the same initial weights (seed 0)
  Result<FitResult> got = (*trainer)->fit(global, TwoEpochs());
  Result<FitResult> want = (*reference)->fit(global, TwoEpochs());
  ASSERT_TRUE(got.ok() && want.ok()) << got.status() << want.status();
  EXPECT_EQ(got->weights, want->weights);
  EXPECT_EQ(got->num_examples, 200);
  EXPECT_EQ(got->steps, 2 * 13);  // ceil(200 / 16) per epoch
  EXPECT_NE(got->weights, global);

  ASSERT_EQ(progress.size(), 2u);
  EXPECT_EQ(progress[0].epoch, 1);
  EXPECT_EQ(progress[1].epoch, 2);
  EXPECT_EQ(progress[1].epochs, 2);
  EXPECT_LT(progress[1].loss, progress[0].loss);
  EXPECT_DOUBLE_EQ(progress[1].loss, got->metrics.at("train_loss"));

  Result<EvalResult> e = (*trainer)->evaluate(got->weights, EvalConfig{});
  Result<EvalResult> e_ref = (*reference)->evaluate(got->weights, EvalConfig{});
  ASSERT_TRUE(e.ok() && e_ref.ok());
  EXPECT_EQ(e->num_examples, 100);
  EXPECT_DOUBLE_EQ(e->metrics.at("accuracy"), e_ref->metrics.at("accuracy"));
}

// A SampleSource over the same samples trains to the in-memory trainer's weights bit for bit,
// reading one batch at a time (never more than the batch size, every sample once per epoch).
TEST(NativeTrainingTest, ASampleSourceTrainsToTheArraysBitsOneBatchAtATime) {
  const SampleArrays train = Samples(200, 1), eval = Samples(100, 2);
  NativeTrainingOptions o;
  o.model = "patterns";
  o.model_toml = kModel;
  o.threads = 2;
  Result<std::unique_ptr<Trainer>> in_memory = CreateNativeTrainer(o, train, eval);
  ASSERT_TRUE(in_memory.ok()) << in_memory.status();
  size_t reads = 0, largest = 0;
  std::vector<int> seen(200, 0);
  SampleSource source{8, 8, 1, 10, 200, nullptr};
  source.read = [&](std::span<const uint32_t> indices, float* features, uint8_t* labels) {
    ++reads;
    largest = std::max(largest, indices.size());
    for (size_t i = 0; i < indices.size(); ++i) {
      const uint32_t s = indices[i];
      ++seen[s];
      std::copy_n(train.features.begin() + s * 64, 64, features + i * 64);
      labels[i] = train.labels[s];
    }
    return Status::Ok();
  };
  Result<std::unique_ptr<Trainer>> streamed = CreateNativeTrainer(o, source, eval);
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  const ModelWeights global = *(*in_memory)->get_parameters();
  Result<FitResult> want = (*in_memory)->fit(global, TwoEpochs());
  Result<FitResult> got = (*streamed)->fit(global, TwoEpochs());
  ASSERT_TRUE(got.ok() && want.ok()) << got.status() << want.status();
  EXPECT_EQ(got->weights, want->weights);
  EXPECT_EQ(got->num_examples, 200);
  EXPECT_EQ(reads, 2u * 13);
  EXPECT_EQ(largest, 16u);
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 2; }));
  Result<EvalResult> e = (*streamed)->evaluate(got->weights, EvalConfig{});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->num_examples, 100);

  // A read that fails ends the fit with its reason; a label out of range is named.
  source.read = [](std::span<const uint32_t>, float*, uint8_t*) {
    return Status::Unavailable("the disk went away");
  };
  Result<std::unique_ptr<Trainer>> failing = CreateNativeTrainer(o, source, eval);
  ASSERT_TRUE(failing.ok()) << failing.status();
  Result<FitResult> failed = (*failing)->fit(global, TwoEpochs());
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("the disk went away"), std::string::npos)
      << failed.status();
  source.read = [](std::span<const uint32_t> indices, float* features, uint8_t* labels) {
    std::fill_n(features, indices.size() * 64, 0.5f);
    std::fill_n(labels, indices.size(), uint8_t{12});
    return Status::Ok();
  };
  Result<std::unique_ptr<Trainer>> mislabelled = CreateNativeTrainer(o, source, eval);
  ASSERT_TRUE(mislabelled.ok());
  failed = (*mislabelled)->fit(global, TwoEpochs());
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(failed.status().message().find("is 12, not below num_classes 10"), std::string::npos)
      << failed.status();

  // What cannot work is refused by name when the trainer is made.
  SampleSource bad = source;
  bad.read = nullptr;
  EXPECT_NE(CreateNativeTrainer(o, bad).status().message().find("train.read"), std::string::npos);
  bad = source;
  bad.size = 0;
  EXPECT_NE(CreateNativeTrainer(o, bad).status().message().find("size must be in [1, 2^32 - 1]"),
            std::string::npos);
  bad = source;
  bad.width = 7;
  EXPECT_FALSE(CreateNativeTrainer(o, bad).ok());
  NativeTrainingOptions gpu = o;
  gpu.device = "cuda";
  EXPECT_NE(CreateNativeTrainer(gpu, source).status().message().find("CPU engine"),
            std::string::npos);
}

TEST(NativeTrainingTest, AModelFileAndABuiltInModelResolveAgainstTheSamples) {
  const char* src = std::getenv("TRIBUTARY_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  NativeTrainingOptions o;
  o.model = std::string(src) + "/examples/native_app/patterns_cnn.toml";
  Result<std::unique_ptr<Trainer>> file = CreateNativeTrainer(o, Samples(20, 3));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->get_parameters()->size(), kModelParameters);

  o.model = "mlp";  // the zoo's MLP, sized for 8x8 inputs and 10 classes
  Result<std::unique_ptr<Trainer>> mlp = CreateNativeTrainer(o, Samples(20, 3));
  ASSERT_TRUE(mlp.ok()) << mlp.status();
  const ModelWeights mlp_weights = *(*mlp)->get_parameters();
  EXPECT_EQ(mlp_weights.tensors().front().name, "fc1.weight");
  EXPECT_EQ(mlp_weights.tensors().front().shape.back(), 64);  // 8 * 8 inputs

  // Without an evaluation set, evaluate says so; without samples at all, nothing is made.
  Result<EvalResult> e = (*mlp)->evaluate(*(*mlp)->get_parameters(), EvalConfig{});
  EXPECT_EQ(e.status().code(), StatusCode::kFailedPrecondition) << e.status();
}

TEST(NativeTrainingTest, BadArraysAndModelsAreRefusedByName) {
  NativeTrainingOptions o;
  o.model_toml = kModel;
  const auto refused = [&](SampleArrays train, SampleArrays eval = {}) {
    Result<std::unique_ptr<Trainer>> t = CreateNativeTrainer(o, std::move(train), std::move(eval));
    EXPECT_FALSE(t.ok());
    return t.ok() ? std::string("(made)") : t.status().ToString();
  };
  SampleArrays short_features = Samples(10, 1);
  short_features.features.pop_back();
  EXPECT_NE(refused(short_features)
                .find("train.features holds 639 values; 10 samples of 64 "
                      "values need 640"),
            std::string::npos);
  SampleArrays bad_label = Samples(10, 1);
  bad_label.labels[3] = 10;
  EXPECT_NE(refused(bad_label).find("train.labels[3] is 10, not below num_classes 10"),
            std::string::npos);
  SampleArrays no_shape = Samples(10, 1);
  no_shape.height = 0;
  EXPECT_NE(refused(no_shape).find("train: height, width and channels must each be in [1, 2^20]"),
            std::string::npos);
  SampleArrays one_class = Samples(10, 1);
  one_class.num_classes = 1;
  EXPECT_NE(refused(one_class).find("train.num_classes must be in [2, 256], got 1"),
            std::string::npos);
  SampleArrays wider = Samples(10, 1);
  wider.width = 4;
  wider.features.resize(10 * 32);
  EXPECT_NE(refused(wider).find("model: model_toml: model 'patterns_cnn' takes input [8, 8, 1], "
                                "but the data's examples are [8, 4, 1]"),
            std::string::npos);
  SampleArrays eval_other = Samples(5, 2);
  eval_other.num_classes = 5;
  for (uint8_t& l : eval_other.labels) l %= 5;
  EXPECT_NE(refused(Samples(10, 1), eval_other).find("eval's samples (64 values, 5 classes)"),
            std::string::npos);
  EXPECT_NE(refused({}, {}).find("train and eval are both empty"), std::string::npos);

  o.model_toml.clear();
  EXPECT_NE(refused(Samples(10, 1)).find("model: give a model file's path"), std::string::npos);
  o.model = "resnet152";
  EXPECT_NE(refused(Samples(10, 1)).find("unknown model 'resnet152'"), std::string::npos);
  o.model = "/nonexistent/model.toml";
  EXPECT_NE(refused(Samples(10, 1)).find("/nonexistent/model.toml"), std::string::npos);
  o.model = "mlp";
  o.device = "tpu";
  EXPECT_NE(refused(Samples(10, 1)).find("device"), std::string::npos);
  o.device = "cpu";
  o.threads = -1;
  EXPECT_NE(refused(Samples(10, 1)).find("threads"), std::string::npos);
}

// The C API's client trains the model with the engine and sends exactly NativeTrainer's delta,
// with its samples in memory or read batch by batch through read_train.
class NativeCClientTest : public ::testing::TestWithParam<bool> {};

TEST_P(NativeCClientTest, ACClientSendsTheUpdateTheEngineComputes) {
  const bool streaming = GetParam();
  TlsCoordinatorFixture fx;
  const auto f = fx.ClientFiles("c-native");
  const SampleArrays train = Samples(120, 5);
  char error[512];
  size_t num_parameters = 0;
  tributary_client* c =
      trib_native_c_create(fx.address().c_str(), f.ca.c_str(), f.cert.c_str(), f.key.c_str(),
                           kModel, train.features.data(), train.labels.data(), train.labels.size(),
                           streaming ? 1 : 0, &num_parameters, error, sizeof(error));
  ASSERT_NE(c, nullptr) << error;
  EXPECT_EQ(num_parameters, kModelParameters);
  auto run = std::async(std::launch::async, [c] { return tributary_client_run(c); });
  auto session = fx.coordinator().WaitSession(0);
  ASSERT_TRUE(session);
  ASSERT_TRUE(session->hello());
  EXPECT_EQ(session->hello()->capabilities.num_examples, 120u);

  Result<ModelSpec> spec = ParseModelToml(kModel, "patterns");
  ASSERT_TRUE(spec.ok());
  Result<std::unique_ptr<NativeTrainer>> reference =
      NativeTrainer::Create(*spec, AsDataset(train), nullptr, 0);
  ASSERT_TRUE(reference.ok());
  const ModelWeights global = *InitWeights(*spec, 7);
  Result<FitResult> want = (*reference)->fit(global, TwoEpochs());
  ASSERT_TRUE(want.ok()) << want.status();

  TaskAssignment task;
  task.round = 1;
  task.fit = TwoEpochs();
  task.codec.spec = "dense";
  task.model = ModelPayload{global.fingerprint(),
                            std::vector<float>(global.data().begin(), global.data().end())};
  session->Send(task);
  std::optional<UpdateSubmission> up = session->Next<UpdateSubmission>();
  ASSERT_TRUE(up);
  EXPECT_EQ(up->num_examples, 120u);
  ASSERT_EQ(up->update.num_floats, kModelParameters);
  std::vector<float> delta(kModelParameters);
  auto codec = MakeCodec("dense");
  ASSERT_TRUE((*codec)->Validate(up->update.bytes, delta.size()).ok());
  BufferSink sink(delta);
  (*codec)->DecodeInto(up->update.bytes, sink, 1.0f);
  size_t differ = 0;
  for (size_t i = 0; i < delta.size(); ++i)
    differ += delta[i] != want->weights.data()[i] - global.data()[i];
  EXPECT_EQ(differ, 0u) << "of " << delta.size() << " delta values";
  EXPECT_DOUBLE_EQ(up->metrics.at("train_loss"), want->metrics.at("train_loss"));
  if (streaming) {
    EXPECT_EQ(trib_native_c_reads(), 2u * 8);  // 2 epochs of ceil(120 / 16) batches
  }

  // Predict runs the engine on the global model the task brought: 10 outputs per sample that sum
  // to 1.
  std::vector<float> probabilities(2 * 10);
  ASSERT_EQ(tributary_client_predict(c, train.features.data(), 2 * 64, 2, probabilities.data(),
                                     probabilities.size(), error, sizeof(error)),
            TRIBUTARY_OK)
      << error;
  float sum = 0.0f;
  for (int k = 0; k < 10; ++k) sum += probabilities[k];
  EXPECT_NEAR(sum, 1.0f, 1e-5f);

  session->Send(Goodbye{"done"});
  ASSERT_EQ(run.wait_for(20s), std::future_status::ready);
  EXPECT_EQ(run.get(), TRIBUTARY_OK) << tributary_client_last_error(c);
  tributary_client_destroy(c);  // and the trainer it owns
}

INSTANTIATE_TEST_SUITE_P(InMemoryAndStreamed, NativeCClientTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return std::string(p.param ? "Streamed" : "InMemory");
                         });

TEST(NativeCApiTest, CreateRefusesWhatItCannotUseAndNamesIt) {
  const SampleArrays train = Samples(30, 1);
  char error[512];
  tributary_native_options n;
  tributary_native_options_init(&n);
  EXPECT_STREQ(n.device, "cpu");
  EXPECT_EQ(n.threads, 1);
  EXPECT_EQ(n.channels, 1);
  n.model_toml = kModel;
  n.height = 8;
  n.width = 8;
  n.num_classes = 10;
  n.train = {train.features.data(), train.labels.data(), train.labels.size()};

  const auto create_error = [&](const tributary_native_options* o) {
    tributary_native_trainer* t = tributary_native_trainer_create(o, error, sizeof(error));
    EXPECT_EQ(t, nullptr);
    tributary_native_trainer_destroy(t);
    return std::string(error);
  };
  EXPECT_NE(create_error(nullptr).find("options is NULL"), std::string::npos);
  tributary_native_options bad = n;
  bad.train.labels = nullptr;
  EXPECT_NE(create_error(&bad).find("train.labels is NULL with count 30"), std::string::npos);
  bad = n;
  bad.eval = {train.features.data(), nullptr, 3};
  EXPECT_NE(create_error(&bad).find("eval.labels is NULL with count 3"), std::string::npos);
  bad = n;
  bad.read_train = [](void*, const uint32_t*, size_t, float*, uint8_t*) { return 0; };
  bad.train_size = 30;
  EXPECT_NE(create_error(&bad).find("train: leave it empty with read_train"), std::string::npos);
  bad.train = {};
  bad.device = "cuda";
  EXPECT_NE(create_error(&bad).find("a sample source trains on the CPU engine"), std::string::npos)
      << error;
  bad = n;
  bad.num_classes = 300;
  EXPECT_NE(create_error(&bad).find("num_classes must be in [2, 256], got 300"), std::string::npos);
  bad = n;
  bad.model_toml = "[[layers]]\ntype = \"attention\"\n";
  EXPECT_NE(create_error(&bad).find("unknown type 'attention'"), std::string::npos) << error;

  tributary_native_trainer* t = tributary_native_trainer_create(&n, error, sizeof(error));
  ASSERT_NE(t, nullptr) << error;
  EXPECT_STREQ(error, "");
  EXPECT_EQ(tributary_native_trainer_num_parameters(t), kModelParameters);
  EXPECT_EQ(tributary_native_trainer_num_classes(t), 10u);

  // A client with a field the trainer supplies is refused, naming it; the trainer stays ours.
  tributary_client_options o;
  tributary_client_options_init(&o);
  o.coordinator = "127.0.0.1:1";
  const tributary_tensor tensor{"w", nullptr, 0};
  const std::pair<void (*)(tributary_client_options*, const tributary_tensor*), const char*>
      fields[] = {
          {[](tributary_client_options* p, const tributary_tensor* x) {
             p->tensors = x;
             p->num_tensors = 1;
           },
           "tensors: leave it unset with a native trainer"},
          {[](tributary_client_options* p, const tributary_tensor*) {
             p->fit = [](void*, const tributary_fit_config*, const float*, float*, size_t,
                         tributary_fit_result*, char*, size_t) { return 0; };
           },
           "fit: leave it unset"},
          {[](tributary_client_options* p, const tributary_tensor*) { p->split = 1; },
           "split: leave it unset"},
      };
  for (const auto& [set, expected] : fields) {
    tributary_client_options with = o;
    set(&with, &tensor);
    EXPECT_EQ(tributary_client_create_native(&with, t, error, sizeof(error)), nullptr);
    EXPECT_NE(std::string(error).find(expected), std::string::npos) << error;
  }
  EXPECT_EQ(tributary_client_create_native(&o, nullptr, error, sizeof(error)), nullptr);
  EXPECT_NE(std::string(error).find("trainer is NULL"), std::string::npos) << error;
  // No TLS files: the client's own check, and the trainer is still the caller's to use.
  EXPECT_EQ(tributary_client_create_native(&o, t, error, sizeof(error)), nullptr);
  EXPECT_NE(std::string(error).find("ca_cert_file"), std::string::npos) << error;
  EXPECT_EQ(tributary_native_trainer_num_parameters(t), kModelParameters);
  tributary_native_trainer_destroy(t);
  EXPECT_EQ(tributary_native_trainer_num_parameters(nullptr), 0u);
}

}  // namespace
}  // namespace tributary
