// Split learning's cut in the CPU engine (train/model_split.h, Engine::ForwardToCut,
// TrainFromCut, BackwardFromCut): a model cut in two trains to the same bits as the whole model,
// on one thread and on several; bad cuts, sizes, labels and call orders are refused by name.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "tests/train/synthetic_images.h"
#include "train/cpu/cpu_engine.h"
#include "train/model_file.h"
#include "train/model_split.h"

namespace tributary {
namespace {

TEST(CutModelTest, CnnCutAfterItsFirstConvolutionBlock) {
  const ModelSpec cnn = *ModelSpecByName("cnn");
  auto split = CutModel(cnn, 3);
  ASSERT_TRUE(split.ok()) << split.status().message();
  EXPECT_EQ(split->cut_shape, (Shape3{14, 14, 32}));
  EXPECT_EQ(split->device.layers.size(), 3u);
  EXPECT_EQ(split->device.num_classes, 0);
  EXPECT_EQ(split->server.input, (Shape3{14, 14, 32}));
  EXPECT_EQ(split->server.layers.size(), 7u);
  EXPECT_EQ(split->device_params, 32u * 5 * 5 * 1 + 32);
  const size_t whole = ModelWeights::Create(*ParameterLayout(cnn))->size();
  EXPECT_EQ(split->device_params + split->server_params, whole);
  // The cut moves work and adds none: the server part's first layer computes its input gradient
  // (2 * 14*14*64 * 5*5*32 FLOPs) as it does inside the whole model.
  const SplitFlops f = SplitTrainFlopsPerSample(*split);
  EXPECT_EQ(f.device + f.server, TrainFlopsPerSample(cnn));
  EXPECT_EQ(f.server, TrainFlopsPerSample(split->server) + 2 * 14 * 14 * 64 * 5 * 5 * 32);
  // conv1's forward and weight gradient: 2 * 2 * 28*28*32 * 5*5 of 72,384,512 (3.5%, split.md).
  EXPECT_EQ(f.device, 2 * 2 * 28 * 28 * 32 * 5 * 5);
  EXPECT_EQ(TrainFlopsPerSample(cnn), 72'384'512);
}

TEST(CutModelTest, RefusesCutsThatLeaveAPartEmptyOrWithoutParameters) {
  const ModelSpec mlp = *ModelSpecByName("mlp");
  for (size_t cut : {size_t{0}, mlp.layers.size()}) {
    auto s = CutModel(mlp, cut);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find("the cut must be in [1, 5]"), std::string::npos)
        << s.status().message();
  }
  auto raw = CutModel(mlp, 1);  // flatten only: the device would send its raw inputs
  ASSERT_FALSE(raw.ok());
  EXPECT_NE(raw.status().message().find("without parameters"), std::string::npos);
  auto head = CutModel(mlp, 5);  // the server part is the last dense: fine
  EXPECT_TRUE(head.ok()) << head.status().message();
}

// A residual connection stays in one part, its source counted from that part's first layer; one
// across a cut is refused, naming both layers.
TEST(CutModelTest, AResidualConnectionStaysWithinAPart) {
  const ModelSpec spec = *ParseModelToml(R"(
input = [8]
classes = 3
layers = [
  { type = "dense", units = 6 },
  { type = "relu" },
  { type = "dense", units = 6 },
  { type = "add", from = 1 },
  { type = "dense", units = 6 },
  { type = "relu" },
  { type = "dense", units = 6 },
  { type = "add", from = 5 },
  { type = "dense" },
]
)",
                                         "residual");
  const SplitModel split = *CutModel(spec, 4);
  EXPECT_EQ(split.device.layers[3].from, 1);
  ASSERT_EQ(split.server.layers[3].kind, LayerKind::kAdd);
  EXPECT_EQ(split.server.layers[3].from, 1);  // layer 5 of the whole model, 1 of the server's
  EXPECT_TRUE(LayerOutputShapes(split.server).ok());
  auto across = CutModel(spec, 3);
  ASSERT_FALSE(across.ok());
  EXPECT_NE(across.status().message().find("layer 3 adds layer 1's output across a cut (at 3)"),
            std::string::npos)
      << across.status().message();
}

TEST(CutModelTest, RefusesSequenceLengths) {
  const ModelSpec spec = *ParseModelToml(R"(
input = [6]
classes = 3
layers = [
  { type = "embedding", vocab = 5, dim = 3, pad = 4 },
  { type = "lstm", units = 4 },
  { type = "dense" },
]
)",
                                         "padded");
  auto s = CutModel(spec, 2);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("its embedding's pad gives sequence lengths, which split "
                                      "learning does not support yet"),
            std::string::npos)
      << s.status().message();
}

TEST(CutModelTest, RefusesAModelWithDropout) {
  ModelSpec mlp = *ModelSpecByName("mlp");
  LayerSpec dropout;
  dropout.kind = LayerKind::kDropout;
  dropout.rate = 0.2f;
  mlp.layers.insert(mlp.layers.begin() + 3, dropout);  // after the first dense + relu
  auto s = CutModel(mlp, 2);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("layer 3 is a dropout layer, which split learning does not "
                                      "support yet"),
            std::string::npos)
      << s.status().message();
}

TEST(CutModelTest, WeightsSplitAndJoinBackToTheSameBits) {
  const ModelSpec lenet = *ModelSpecByName("lenet");
  const SplitModel split = *CutModel(lenet, 6);
  const ModelWeights w = *InitWeights(lenet, 11);
  auto parts = SplitWeights(split, w);
  ASSERT_TRUE(parts.ok());
  EXPECT_EQ(parts->first.size(), split.device_params);
  EXPECT_EQ(parts->first.fingerprint(),
            ModelWeights::Create(*ParameterLayout(split.device))->fingerprint());
  EXPECT_EQ(parts->first.tensors()[0].name, "conv1.weight");
  EXPECT_EQ(parts->second.tensors()[0].name, "fc1.weight");
  auto joined = JoinWeights(split, parts->first, parts->second);
  ASSERT_TRUE(joined.ok());
  EXPECT_EQ(joined->content_hash(), w.content_hash());
  EXPECT_FALSE(JoinWeights(split, parts->second, parts->first).ok());
  EXPECT_FALSE(SplitWeights(split, *InitWeights(*ModelSpecByName("mlp"), 1)).ok());
}

struct SplitCase {
  const char* model;
  size_t cut;
  int threads;
};

class SplitEngineTest : public ::testing::TestWithParam<SplitCase> {};

// Whole-model TrainStep against ForwardToCut + TrainFromCut + BackwardFromCut, step after step,
// with momentum and weight decay: the parts' weights, joined, are the whole model's bit for bit,
// and so are the losses.
TEST_P(SplitEngineTest, TrainsToTheWholeModelsBits) {
  const SplitCase c = GetParam();
  const ModelSpec spec = *ModelSpecByName(c.model);
  const SplitModel split = *CutModel(spec, c.cut);
  const Dataset data = testing::SyntheticImages(96, 3);
  const ModelWeights init = *InitWeights(spec, 5);
  auto whole = *cpu::CpuEngine::Create(spec, 32, c.threads);
  auto device = *cpu::CpuEngine::Create(split.device, 32, c.threads);
  auto server = *cpu::CpuEngine::Create(split.server, 32, c.threads);
  auto parts = *SplitWeights(split, init);
  ASSERT_TRUE(whole->LoadWeights(init).ok());
  ASSERT_TRUE(device->LoadWeights(parts.first).ok());
  ASSERT_TRUE(server->LoadWeights(parts.second).ok());
  SgdConfig sgd;
  sgd.lr = 0.05f;
  sgd.momentum = 0.9f;
  sgd.weight_decay = 1e-4f;
  const int64_t cut_numel = split.cut_shape.numel();
  for (int step = 0; step < 4; ++step) {
    std::vector<uint32_t> batch(step == 3 ? 17 : 32);  // a short last batch
    std::iota(batch.begin(), batch.end(), static_cast<uint32_t>(step * 20));
    const StepStats want = whole->TrainStep(data, batch, sgd);
    std::vector<float> acts(batch.size() * cut_numel), grad(acts.size());
    std::vector<uint8_t> labels;
    for (uint32_t i : batch) labels.push_back(data.labels[i]);
    ASSERT_TRUE(device->ForwardToCut(data, batch, acts).ok());
    auto got = server->TrainFromCut(acts, labels, sgd, grad);
    ASSERT_TRUE(got.ok()) << got.status().message();
    ASSERT_TRUE(device->BackwardFromCut(grad, sgd).ok());
    EXPECT_EQ(got->loss_sum, want.loss_sum) << "step " << step;
    EXPECT_EQ(got->correct, want.correct);
    EXPECT_EQ(got->count, static_cast<int64_t>(batch.size()));
  }
  ModelWeights w = init.ZerosLike(), d = parts.first.ZerosLike(), s = parts.second.ZerosLike();
  ASSERT_TRUE(whole->StoreWeights(&w).ok());
  ASSERT_TRUE(device->StoreWeights(&d).ok());
  ASSERT_TRUE(server->StoreWeights(&s).ok());
  EXPECT_NE(w.content_hash(), init.content_hash());
  EXPECT_EQ(JoinWeights(split, d, s)->content_hash(), w.content_hash());
}

INSTANTIATE_TEST_SUITE_P(Models, SplitEngineTest,
                         // (cnn on one thread took 62 s under qemu in the aarch64 suite; lenet
                         // cut at 3 is the same kind of cut, after the first convolution block)
                         ::testing::Values(SplitCase{"mlp", 3, 1}, SplitCase{"lenet", 3, 1},
                                           SplitCase{"cnn", 3, 2}, SplitCase{"lenet", 6, 1},
                                           SplitCase{"lenet", 7, 3}),
                         [](const ::testing::TestParamInfo<SplitCase>& p) {
                           return std::string(p.param.model) + "_cut" +
                                  std::to_string(p.param.cut) + "_threads" +
                                  std::to_string(p.param.threads);
                         });

struct UCase {
  const char* model;
  size_t cut, head;
  int threads;
};

class UShapedSplitEngineTest : public ::testing::TestWithParam<UCase> {};

// The U-shape: the front's ForwardToCut, the middle's ForwardToCut from activations, the head's
// TrainFromCut, the middle's BackwardFromCut with its input gradient and the front's
// BackwardFromCut are the whole model's TrainStep bit for bit, losses and weights.
TEST_P(UShapedSplitEngineTest, TrainsToTheWholeModelsBits) {
  const UCase c = GetParam();
  const ModelSpec spec = *ModelSpecByName(c.model);
  auto cut = CutModel(spec, c.cut, c.head);
  ASSERT_TRUE(cut.ok()) << cut.status().message();
  const SplitModel& split = *cut;
  ASSERT_TRUE(split.u_shaped());
  EXPECT_EQ(split.server.num_classes, 0);
  EXPECT_EQ(split.head.num_classes, spec.num_classes);
  const Dataset data = testing::SyntheticImages(96, 3);
  const ModelWeights init = *InitWeights(spec, 5);
  auto whole = *cpu::CpuEngine::Create(spec, 32, c.threads);
  auto front = *cpu::CpuEngine::Create(split.device, 32, c.threads);
  auto middle = *cpu::CpuEngine::Create(split.server, 32, c.threads);
  auto head = *cpu::CpuEngine::Create(split.head, 32, c.threads);
  auto parts = *SplitWeights(split, init);
  EXPECT_EQ(parts.first.size(), split.device_params);
  auto device_parts = *SplitDeviceWeights(split, parts.first);
  EXPECT_EQ(device_parts.second.size(), split.head_params);
  ASSERT_TRUE(whole->LoadWeights(init).ok());
  ASSERT_TRUE(front->LoadWeights(device_parts.first).ok());
  ASSERT_TRUE(middle->LoadWeights(parts.second).ok());
  ASSERT_TRUE(head->LoadWeights(device_parts.second).ok());
  SgdConfig sgd;
  sgd.lr = 0.05f;
  sgd.momentum = 0.9f;
  sgd.weight_decay = 1e-4f;
  const int64_t a1 = split.cut_shape.numel(), a2 = split.head_shape.numel();
  for (int step = 0; step < 4; ++step) {
    std::vector<uint32_t> batch(step == 3 ? 17 : 32);  // a short last batch
    std::iota(batch.begin(), batch.end(), static_cast<uint32_t>(step * 20));
    const StepStats want = whole->TrainStep(data, batch, sgd);
    const size_t n = batch.size();
    std::vector<float> acts(n * a1), mid(n * a2), head_grad(n * a2), front_grad(n * a1);
    std::vector<uint8_t> labels;
    for (uint32_t i : batch) labels.push_back(data.labels[i]);
    ASSERT_TRUE(front->ForwardToCut(data, batch, acts).ok());
    ASSERT_TRUE(middle->ForwardToCut(acts, mid).ok());
    auto got = head->TrainFromCut(mid, labels, sgd, head_grad);
    ASSERT_TRUE(got.ok()) << got.status().message();
    ASSERT_TRUE(middle->BackwardFromCut(head_grad, sgd, front_grad).ok());
    ASSERT_TRUE(front->BackwardFromCut(front_grad, sgd).ok());
    EXPECT_EQ(got->loss_sum, want.loss_sum) << "step " << step;
    EXPECT_EQ(got->correct, want.correct);
  }
  ModelWeights w = init.ZerosLike(), s = parts.second.ZerosLike();
  ModelWeights f = device_parts.first.ZerosLike(), h = device_parts.second.ZerosLike();
  ASSERT_TRUE(whole->StoreWeights(&w).ok());
  ASSERT_TRUE(front->StoreWeights(&f).ok());
  ASSERT_TRUE(middle->StoreWeights(&s).ok());
  ASSERT_TRUE(head->StoreWeights(&h).ok());
  EXPECT_NE(w.content_hash(), init.content_hash());
  const ModelWeights device = *JoinDeviceWeights(split, f, h);
  EXPECT_EQ(JoinWeights(split, device, s)->content_hash(), w.content_hash());
}

INSTANTIATE_TEST_SUITE_P(Models, UShapedSplitEngineTest,
                         // (cnn's cases took 56 s each under qemu in the aarch64 suite; lenet
                         // cut at 3 gives a middle with a convolution, pooling and dense layers)
                         ::testing::Values(UCase{"mlp", 3, 4, 1}, UCase{"lenet", 3, 9, 1},
                                           UCase{"lenet", 3, 9, 2}, UCase{"lenet", 6, 9, 3}),
                         [](const ::testing::TestParamInfo<UCase>& p) {
                           return std::string(p.param.model) + "_cut" +
                                  std::to_string(p.param.cut) + "_head" +
                                  std::to_string(p.param.head) + "_threads" +
                                  std::to_string(p.param.threads);
                         });

TEST(CutModelTest, AUShapedCutKeepsTheHeadOnTheDeviceAndJoinsBackToTheSameBits) {
  const ModelSpec lenet = *ModelSpecByName("lenet");
  auto u = CutModel(lenet, 6, 9);
  ASSERT_TRUE(u.ok()) << u.status().message();
  EXPECT_EQ(u->head.layers.size(), lenet.layers.size() - 9);
  EXPECT_EQ(u->server.layers.size(), 3u);
  EXPECT_EQ(u->server.input, u->cut_shape);
  EXPECT_EQ(u->head.input, u->head_shape);
  const size_t whole = ModelWeights::Create(*ParameterLayout(lenet))->size();
  EXPECT_EQ(u->device_params + u->server_params, whole);
  const ModelWeights w = *InitWeights(lenet, 3);
  auto parts = *SplitWeights(*u, w);
  // The device's tensors: the front's, then the head's.
  const auto& t = parts.first.tensors();
  EXPECT_EQ(t.front().name, "conv1.weight");
  EXPECT_EQ(t.back().name, lenet.layers.back().name + ".bias");
  EXPECT_EQ(parts.first.fingerprint(), ModelWeights::Create(*DeviceLayout(*u))->fingerprint());
  EXPECT_EQ(JoinWeights(*u, parts.first, parts.second)->content_hash(), w.content_hash());
  // The work is moved, not added: the head's first layer's input gradient goes up.
  const SplitFlops f = SplitTrainFlopsPerSample(*u);
  EXPECT_EQ(f.device + f.server, TrainFlopsPerSample(lenet));
  // Refused: a head before or at the cut, past the model, or without parameters.
  for (size_t bad : {size_t{6}, size_t{5}, lenet.layers.size()}) {
    auto r = CutModel(lenet, 6, bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("the head's cut must be in [7, "), std::string::npos)
        << r.status().message();
  }
  // A model ending in a ReLU: a head of that ReLU alone would send up the loss's gradient.
  ModelSpec odd = *ModelSpecByName("mlp");
  LayerSpec relu;
  relu.kind = LayerKind::kReLU;
  odd.layers.push_back(relu);
  auto no_params = CutModel(odd, 3, odd.layers.size() - 1);
  ASSERT_FALSE(no_params.ok());
  EXPECT_NE(no_params.status().message().find("names every label"), std::string::npos)
      << no_params.status().message();
  EXPECT_FALSE(SplitDeviceWeights(*CutModel(lenet, 6), parts.first).ok());
}

TEST(SplitEngineErrorsTest, NamesTheSizeOrCallThatDoesNotFit) {
  const SplitModel split = *CutModel(*ModelSpecByName("mlp"), 3);
  const Dataset data = testing::SyntheticImages(8, 1);
  auto device = *cpu::CpuEngine::Create(split.device, 4);
  auto server = *cpu::CpuEngine::Create(split.server, 4);
  std::vector<uint32_t> batch = {0, 1, 2};
  std::vector<float> acts(3 * 200), grad(3 * 200);
  SgdConfig sgd;
  Status s = device->BackwardFromCut(grad, sgd);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  std::vector<float> short_acts(3 * 199);
  s = device->ForwardToCut(data, batch, short_acts);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("597"), std::string::npos) << s.message();
  std::vector<uint32_t> big(5, 0);
  EXPECT_FALSE(device->ForwardToCut(data, big, std::span<float>(acts.data(), 5 * 200)).ok());
  std::vector<uint32_t> past = {0, 8};
  EXPECT_NE(device->ForwardToCut(data, past, std::span<float>(acts.data(), 400))
                .message()
                .find("sample index 8"),
            std::string::npos);
  ASSERT_TRUE(device->ForwardToCut(data, batch, acts).ok());
  EXPECT_FALSE(device->BackwardFromCut(std::span<float>(grad.data(), 200), sgd).ok());
  std::vector<uint8_t> labels = {1, 2, 10};
  auto r = server->TrainFromCut(acts, labels, sgd, grad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("label 10 of sample 2"), std::string::npos);
  labels = {1, 2, 3};
  EXPECT_FALSE(server->TrainFromCut(std::span<float>(acts.data(), 599), labels, sgd, grad).ok());
  EXPECT_EQ(device->TrainFromCut(acts, labels, sgd, grad).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(server->ForwardToCut(data, batch, acts).code(), StatusCode::kFailedPrecondition);
  std::vector<float> probs(10);
  EXPECT_FALSE(device->Predict(std::span<float>(acts.data(), 784), probs).ok());

  // The U-shape's middle part (mlp cut at 3 and 4: dense 200 alone): inputs that are not whole
  // samples, a batch too large, buffers of the wrong size, and a server part asked to run to a cut.
  const SplitModel u = *CutModel(*ModelSpecByName("mlp"), 3, 4);
  auto middle = *cpu::CpuEngine::Create(u.server, 4);
  std::vector<float> in(3 * 200, 0.1f), out(3 * 200), back(3 * 200);
  s = middle->ForwardToCut(std::span<float>(in.data(), 599), out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("not a whole number of samples of 200"), std::string::npos)
      << s.message();
  std::vector<float> big_in(5 * 200), big_out(5 * 200);
  EXPECT_NE(middle->ForwardToCut(big_in, big_out).message().find("a batch of 5 samples"),
            std::string::npos);
  EXPECT_FALSE(middle->ForwardToCut(in, std::span<float>(out.data(), 400)).ok());
  EXPECT_EQ(middle->BackwardFromCut(grad, sgd, back).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(middle->ForwardToCut(in, out).ok());
  s = middle->BackwardFromCut(grad, sgd, std::span<float>(back.data(), 400));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("the input gradient buffer holds 400 values"), std::string::npos)
      << s.message();
  ASSERT_TRUE(middle->BackwardFromCut(grad, sgd, back).ok());
  EXPECT_EQ(server->ForwardToCut(in, out).code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tributary
