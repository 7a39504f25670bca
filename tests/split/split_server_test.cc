// SplitServer and SplitTaskChannel (split/): a device part trained through the wire messages
// against the server part. SFLV2 with one client is centralized training of the whole model;
// SFLV1 with several clients, batches interleaved on threads, is the num_examples-weighted mean
// of each client's whole-model training, computed here independently; q8 cuts the bytes; every
// bad batch is refused by name and changes nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <thread>

#include "split/cut_tensor.h"
#include "split/split_server.h"
#include "split/split_task_channel.h"
#include "tests/split/loopback_exchange.h"
#include "tests/train/synthetic_images.h"
#include "train/native_trainer.h"

namespace tributary {
namespace {

using testing::LoopbackSplitExchange;

struct Fixture {
  // head > 0: the U-shaped split, the device also holding layers head .. end.
  explicit Fixture(size_t head_cut = 0) : head(head_cut) {}
  size_t head;
  ModelSpec whole = *ModelSpecByName("lenet");
  SplitModel split = *CutModel(whole, static_cast<size_t>(whole.cut), head);
  ModelWeights init = *InitWeights(whole, 3);
  ModelWeights device_init = SplitWeights(split, init)->first;
  ModelWeights server_init = SplitWeights(split, init)->second;
  FitConfig fit = [] {
    FitConfig f;
    f.epochs = 2;
    f.batch_size = 16;
    f.lr = 0.05f;
    f.momentum = 0.9f;
    f.weight_decay = 1e-4f;
    f.seed = 77;
    return f;
  }();
  TaskAssignment Task(uint64_t round, const std::string& codec = "dense") const {
    TaskAssignment t;
    t.round = round;
    t.fit = fit;
    t.split_cut = static_cast<uint32_t>(split.cut);
    t.split_head = static_cast<uint32_t>(split.head_cut);
    t.split_codec.spec = codec;
    return t;
  }
  uint64_t device_fp() const { return device_init.fingerprint(); }
  std::unique_ptr<SplitServer> Server(SplitMode mode, const std::string& codec = "dense") const {
    auto s = SplitServer::Create({split, mode, codec, 1}, server_init);
    EXPECT_TRUE(s.ok()) << s.status();
    return std::move(*s);
  }
  std::shared_ptr<const Dataset> Data(uint64_t seed, int64_t n) const {
    return std::make_shared<Dataset>(testing::SyntheticImages(n, seed));
  }
  // The device's trainer: the front, and the head in a U-shaped split.
  std::unique_ptr<NativeTrainer> Device(std::shared_ptr<const Dataset> data) const {
    auto t = split.u_shaped() ? NativeTrainer::CreateWithHead(split, data, 0)
                              : NativeTrainer::Create(split.device, data, nullptr, 0);
    EXPECT_TRUE(t.ok()) << t.status();
    return std::move(*t);
  }
};

// The whole model's fit() on one client's data, as (device part, server part).
std::pair<ModelWeights, ModelWeights> Centralized(const Fixture& f,
                                                  std::shared_ptr<const Dataset> data) {
  auto t = *NativeTrainer::Create(f.whole, data, nullptr, 0);
  Result<FitResult> r = t->fit(f.init, f.fit);
  EXPECT_TRUE(r.ok()) << r.status();
  return *SplitWeights(f.split, r->weights);
}

TEST(SplitServerTest, Sflv2WithOneClientIsCentralizedTrainingOfTheWholeModel) {
  Fixture f;
  auto data = f.Data(5, 100);  // batches of 16: the last one holds 4
  auto server = f.Server(SplitMode::kSflV2);
  auto device = *NativeTrainer::Create(f.split.device, data, nullptr, 0);
  server->OpenRound(1, f.fit, {"edge-1"});
  LoopbackSplitExchange ex(*server, "edge-1", *SplitTaskChannel::Create(f.Task(1), f.device_fp()));
  Result<FitResult> r = device->fit_split(f.device_init, f.fit, ex);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->steps, 14);  // 2 epochs of 7 batches
  EXPECT_EQ(r->num_examples, 100);
  server->Accept("edge-1", 100);
  const ModelWeights& s = server->CloseRound();
  const auto [want_device, want_server] = Centralized(f, data);
  // The cut moves work between the parts and changes no arithmetic: the same bits.
  EXPECT_EQ(r->weights.content_hash(), want_device.content_hash());
  EXPECT_EQ(s.content_hash(), want_server.content_hash());
  EXPECT_NE(s.content_hash(), f.server_init.content_hash());
  const SplitServerStats st = server->stats();
  EXPECT_EQ(st.batches, 14u);
  EXPECT_EQ(st.samples, 200u);
  // Dense: 4 bytes per activation each way (lenet's cut: 14x14x6 per sample) plus a small header.
  EXPECT_GE(st.bytes_in, 200u * 14 * 14 * 6 * 4);
  EXPECT_LT(st.bytes_in, 200u * 14 * 14 * 6 * 4 + 14 * 64);
  EXPECT_EQ(st.bytes_out, st.bytes_in);
  EXPECT_GT(st.compute_seconds, 0.0);
}

TEST(SplitServerTest, Sflv1AveragesEachClientsServerPartByItsExamples) {
  Fixture f;
  const std::vector<std::string> ids = {"edge-a", "edge-b", "edge-c"};
  const std::vector<int64_t> sizes = {48, 80, 33};
  std::vector<std::shared_ptr<const Dataset>> data;
  for (size_t i = 0; i < ids.size(); ++i) data.push_back(f.Data(10 + i, sizes[i]));
  auto server = f.Server(SplitMode::kSflV1);
  server->OpenRound(4, f.fit, ids);
  // The clients train at once, their batches interleaving however the threads run.
  std::vector<Result<FitResult>> results(ids.size(), Status::Internal("not run"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ids.size(); ++i)
    threads.emplace_back([&, i] {
      auto device = *NativeTrainer::Create(f.split.device, data[i], nullptr, 0);
      LoopbackSplitExchange ex(*server, ids[i],
                               *SplitTaskChannel::Create(f.Task(4), f.device_fp()));
      results[i] = device->fit_split(f.device_init, f.fit, ex);
    });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].status();
    server->Accept(ids[i], static_cast<uint64_t>(sizes[i]));
  }
  const ModelWeights got = server->CloseRound();

  // The reference: each client's whole model trained alone; the server parts' weighted mean.
  std::vector<double> mean(f.server_init.size(), 0.0);
  double total = 0.0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto [dev, srv] = Centralized(f, data[i]);
    EXPECT_EQ(results[i]->weights.content_hash(), dev.content_hash()) << ids[i];
    for (size_t k = 0; k < mean.size(); ++k) mean[k] += sizes[i] * double{srv.data()[k]};
    total += sizes[i];
  }
  double max_diff = 0.0;
  for (size_t k = 0; k < mean.size(); ++k)
    max_diff = std::max(max_diff, std::fabs(mean[k] / total - got.data()[k]));
  EXPECT_LT(max_diff, 1e-7);  // one float rounding of values below 1
  EXPECT_EQ(server->stats().batches, 2u * (3 + 5 + 3));
}

// SFLV1 over processes (the simulator's MPI ranks): client b's copy trains on another server (as
// another rank's), which TrainedCopy hands over and AdoptCopy takes into the round; the average
// and the stats are the bits and counts of training every copy here.
TEST(SplitServerTest, Sflv1CopiesTrainedElsewhereJoinTheAverageBitForBit) {
  Fixture f;
  const std::vector<std::string> ids = {"edge-a", "edge-b"};
  const std::vector<int64_t> sizes = {48, 80};
  std::vector<std::shared_ptr<const Dataset>> data = {f.Data(21, 48), f.Data(22, 80)};
  auto train = [&](SplitServer& server, size_t i) {
    auto device = *NativeTrainer::Create(f.split.device, data[i], nullptr, 0);
    LoopbackSplitExchange ex(server, ids[i], *SplitTaskChannel::Create(f.Task(5), f.device_fp()));
    ASSERT_TRUE(device->fit_split(f.device_init, f.fit, ex).ok());
  };
  auto here = f.Server(SplitMode::kSflV1);
  here->OpenRound(5, f.fit, ids);
  train(*here, 0);
  train(*here, 1);
  const SplitServerStats want_stats = here->stats();
  for (size_t i = 0; i < ids.size(); ++i) here->Accept(ids[i], static_cast<uint64_t>(sizes[i]));
  const ModelWeights want = here->CloseRound();

  auto zero = f.Server(SplitMode::kSflV1), other = f.Server(SplitMode::kSflV1);
  zero->OpenRound(5, f.fit, ids);
  other->OpenRound(5, zero->round_fit(), {"edge-b"});
  EXPECT_FALSE(other->TrainedCopy("edge-b"));  // no batch yet
  train(*zero, 0);
  train(*other, 1);
  std::optional<SplitCopy> copy = other->TrainedCopy("edge-b");
  ASSERT_TRUE(copy);
  EXPECT_EQ(copy->stats.batches, 2u * 5);
  EXPECT_EQ(copy->stats.samples, 160u);
  EXPECT_FALSE(other->TrainedCopy("edge-a"));  // not one of its clients
  // Refused: a client that trained here already, one without a task, another layout.
  EXPECT_EQ(zero->AdoptCopy("edge-a", *copy).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(zero->AdoptCopy("edge-z", *copy).code(), StatusCode::kFailedPrecondition);
  SplitCopy wrong = *copy;
  wrong.weights = f.device_init;
  EXPECT_EQ(zero->AdoptCopy("edge-b", wrong).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(zero->AdoptCopy("edge-b", *copy).ok());
  EXPECT_EQ(zero->AdoptCopy("edge-b", *copy).code(), StatusCode::kFailedPrecondition);  // twice
  const SplitServerStats got_stats = zero->stats();
  EXPECT_EQ(got_stats.batches, want_stats.batches);
  EXPECT_EQ(got_stats.samples, want_stats.samples);
  EXPECT_EQ(got_stats.bytes_in, want_stats.bytes_in);
  EXPECT_EQ(got_stats.bytes_out, want_stats.bytes_out);
  for (size_t i = 0; i < ids.size(); ++i) zero->Accept(ids[i], static_cast<uint64_t>(sizes[i]));
  EXPECT_EQ(zero->CloseRound().content_hash(), want.content_hash());
  EXPECT_NE(want.content_hash(), f.server_init.content_hash());
  // SFLV2 has no copies to hand over or take.
  auto v2 = f.Server(SplitMode::kSflV2);
  v2->OpenRound(5, f.fit, ids);
  EXPECT_FALSE(v2->TrainedCopy("edge-a"));
  EXPECT_EQ(v2->AdoptCopy("edge-b", *copy).code(), StatusCode::kFailedPrecondition);
}

TEST(SplitServerTest, AnAbandonedRoundLeavesTheServerPartAsItWas) {
  Fixture f;
  auto data = f.Data(6, 40);
  for (SplitMode mode : {SplitMode::kSflV1, SplitMode::kSflV2}) {
    auto server = f.Server(mode);
    server->OpenRound(2, f.fit, {"edge-1"});
    auto device = *NativeTrainer::Create(f.split.device, data, nullptr, 0);
    LoopbackSplitExchange ex(*server, "edge-1",
                             *SplitTaskChannel::Create(f.Task(2), f.device_fp()));
    ASSERT_TRUE(device->fit_split(f.device_init, f.fit, ex).ok());
    server->AbandonRound();
    EXPECT_EQ(server->weights().content_hash(), f.server_init.content_hash());
    // A closed round without any accepted client (SFLV1) also keeps it.
    server->OpenRound(3, f.fit, {"edge-1"});
    EXPECT_EQ(server->CloseRound().content_hash(), f.server_init.content_hash());
  }
}

TEST(SplitServerTest, Q8CutsTheBytesAndStillTrains) {
  Fixture f;
  auto data = f.Data(8, 96);
  uint64_t bytes[2] = {0, 0};
  double loss[2] = {0, 0};
  const char* codecs[2] = {"dense", "q8"};
  for (int c = 0; c < 2; ++c) {
    auto server = f.Server(SplitMode::kSflV2, codecs[c]);
    server->OpenRound(1, f.fit, {"edge-1"});
    auto device = *NativeTrainer::Create(f.split.device, data, nullptr, 0);
    LoopbackSplitExchange ex(*server, "edge-1",
                             *SplitTaskChannel::Create(f.Task(1, codecs[c]), f.device_fp()));
    Result<FitResult> r = device->fit_split(f.device_init, f.fit, ex);
    ASSERT_TRUE(r.ok()) << r.status();
    bytes[c] = server->stats().bytes_in;
    loss[c] = r->metrics.at("train_loss");
  }
  EXPECT_LT(static_cast<double>(bytes[1]), 0.3 * static_cast<double>(bytes[0]));
  EXPECT_NEAR(loss[1], loss[0], 0.05 * loss[0]);
}

TEST(SplitServerTest, EveryBadBatchIsRefusedByNameAndChangesNothing) {
  Fixture f;
  auto server = f.Server(SplitMode::kSflV1);
  const int64_t cut = f.split.cut_shape.numel();
  auto channel = *SplitTaskChannel::Create(f.Task(5), f.device_fp());
  std::vector<float> acts(4 * static_cast<size_t>(cut), 0.5f);
  std::vector<uint8_t> labels = {1, 2, 3, 4};
  SplitActivations good = *channel.Activations(acts, labels);
  auto refused = [&](const SplitActivations& m, const std::string& client, const std::string& why) {
    Result<SplitGradient> g = server->OnActivations(client, m);
    ASSERT_FALSE(g.ok()) << why;
    EXPECT_NE(g.status().message().find(why), std::string::npos) << g.status().message();
  };
  refused(good, "edge-1", "no split round is open");
  server->OpenRound(5, f.fit, {"edge-1"});
  refused(good, "edge-2", "edge-2, which holds no task in round 5");
  SplitActivations m = good;
  m.round = 4;
  refused(m, "edge-1", "activations for round 4, but round 5 is open");
  m = good;
  m.labels.assign(17, 0);
  refused(m, "edge-1", "batch 0 says it holds 4 samples and carries 17 labels");
  m.samples = 17;
  refused(m, "edge-1", "a split batch of 17 samples; the round's batch size is 16");
  m = good;
  m.labels[2] = 10;
  refused(m, "edge-1", "label 10 of sample 2");
  m = good;
  m.labels.pop_back();
  m.samples = 3;
  refused(m, "edge-1", "holds 4704 values; 3528 were expected");
  m = good;
  m.activations.codec = "q8";
  refused(m, "edge-1", "encoded with 'q8'; this run's split codec is 'dense'");
  m = good;
  m.activations.layout_fingerprint ^= 1;
  refused(m, "edge-1", "another model's layout fingerprint");
  m = good;
  std::vector<uint8_t> nan(m.activations.bytes.begin(), m.activations.bytes.end());
  const float bad = std::nanf("");
  std::memcpy(nan.data() + nan.size() - 4, &bad, 4);
  m.activations.bytes = SharedBytes(std::move(nan));
  refused(m, "edge-1", "the activations of batch 0");
  m = good;
  m.batch = 1;
  refused(m, "edge-1", "batch 1 arrived; batch 0 was next");
  EXPECT_EQ(server->stats().batches, 0u);
  // After all that, the good batch trains, once.
  Result<SplitGradient> g = server->OnActivations("edge-1", good);
  ASSERT_TRUE(g.ok()) << g.status();
  Result<CutGradient> cg = channel.Gradient(*g);
  ASSERT_TRUE(cg.ok()) << cg.status();
  EXPECT_EQ(cg->gradient.size(), acts.size());
  refused(good, "edge-1", "batch 0 arrived; batch 1 was next");
  SplitGradient stale = *g;
  stale.batch = 7;
  EXPECT_FALSE(channel.Gradient(stale).ok());
  EXPECT_EQ(server->stats().batches, 1u);
}

// The U-shaped split (lenet cut at 3 and 9: the device holds the first convolution block and
// the last two dense layers with the loss; the server the second block and dense 120): SFLV1 with
// one client is the whole model's fit bit for bit, and no label ever reaches the server.
TEST(SplitServerTest, AUShapedSplitWithOneClientIsCentralizedTrainingOfTheWholeModel) {
  Fixture f(9);
  ASSERT_TRUE(f.split.u_shaped());
  auto data = f.Data(5, 100);
  auto server = f.Server(SplitMode::kSflV1);
  auto device = f.Device(data);
  server->OpenRound(1, f.fit, {"edge-1"});
  LoopbackSplitExchange ex(*server, "edge-1", *SplitTaskChannel::Create(f.Task(1), f.device_fp()));
  Result<FitResult> r = device->fit_split(f.device_init, f.fit, ex);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->steps, 14);
  server->Accept("edge-1", 100);
  const ModelWeights& s = server->CloseRound();
  const auto [want_device, want_server] = Centralized(f, data);
  EXPECT_EQ(r->weights.content_hash(), want_device.content_hash());
  EXPECT_EQ(s.content_hash(), want_server.content_hash());
  EXPECT_NE(s.content_hash(), f.server_init.content_hash());
  // The head's loss is the device's own: the whole model's epoch loss.
  auto whole = *NativeTrainer::Create(f.whole, data, nullptr, 0);
  EXPECT_EQ(r->metrics.at("train_loss"), whole->fit(f.init, f.fit)->metrics.at("train_loss"));
  const SplitServerStats st = server->stats();
  EXPECT_EQ(st.batches, 14u);
  EXPECT_EQ(st.samples, 200u);
  // Two round trips a batch, dense: up the first cut (14x14x6) and the head's input gradient
  // (dense 120's output), down the middle's output and the first cut's gradient.
  const uint64_t values = 200u * (14 * 14 * 6 + 120);
  EXPECT_GE(st.bytes_in, values * 4);
  EXPECT_LT(st.bytes_in, values * 4 + 28 * 64);
  EXPECT_EQ(st.bytes_out, st.bytes_in);
}

TEST(SplitServerTest, AUShapedSflv1AveragesEachClientsMiddleByItsExamples) {
  Fixture f(9);
  const std::vector<std::string> ids = {"edge-a", "edge-b"};
  const std::vector<int64_t> sizes = {48, 33};
  std::vector<std::shared_ptr<const Dataset>> data = {f.Data(31, 48), f.Data(32, 33)};
  auto server = f.Server(SplitMode::kSflV1);
  server->OpenRound(2, f.fit, ids);
  std::vector<Result<FitResult>> results(ids.size(), Status::Internal("not run"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ids.size(); ++i)
    threads.emplace_back([&, i] {
      LoopbackSplitExchange ex(*server, ids[i],
                               *SplitTaskChannel::Create(f.Task(2), f.device_fp()));
      results[i] = f.Device(data[i])->fit_split(f.device_init, f.fit, ex);
    });
  for (auto& t : threads) t.join();
  std::vector<double> mean(f.server_init.size(), 0.0);
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].status();
    server->Accept(ids[i], static_cast<uint64_t>(sizes[i]));
    const auto [dev, srv] = Centralized(f, data[i]);
    EXPECT_EQ(results[i]->weights.content_hash(), dev.content_hash()) << ids[i];
    for (size_t k = 0; k < mean.size(); ++k) mean[k] += sizes[i] * double{srv.data()[k]};
  }
  const ModelWeights got = server->CloseRound();
  double max_diff = 0.0;
  for (size_t k = 0; k < mean.size(); ++k)
    max_diff = std::max(max_diff, std::fabs(mean[k] / 81.0 - got.data()[k]));
  EXPECT_LT(max_diff, 1e-7);
}

TEST(SplitServerTest, AUShapedSplitRefusesLabelsAndMessagesOutOfTurn) {
  Fixture f(9);
  auto server = f.Server(SplitMode::kSflV1);
  const size_t cut = static_cast<size_t>(f.split.cut_shape.numel());
  const size_t mid = static_cast<size_t>(f.split.head_shape.numel());
  auto channel = *SplitTaskChannel::Create(f.Task(5), f.device_fp());
  std::vector<float> acts(3 * cut, 0.25f);
  std::vector<uint8_t> labels = {1, 2, 3};
  // The channel itself sends no labels in a U-shaped task.
  EXPECT_NE(channel.Activations(acts, labels).status().message().find("without labels"),
            std::string::npos);
  SplitActivations good = *channel.FrontActivations(acts, 3);
  EXPECT_TRUE(good.labels.empty());
  auto refused = [&](const Message& m, const std::string& why) {
    Result<Message> a = server->OnMessage("edge-1", m);
    ASSERT_FALSE(a.ok()) << why;
    EXPECT_NE(a.status().message().find(why), std::string::npos) << a.status().message();
  };
  server->OpenRound(5, f.fit, {"edge-1"});
  SplitActivations m = good;
  m.labels = {1, 2, 3};
  refused(m, "carries 3 labels; a U-shaped split's labels stay on the device");
  m = good;
  m.samples = 2;
  refused(m, "holds 3528 values; 2352 were expected");
  std::vector<float> head_grad(3 * mid, 0.01f);
  SplitGradient early;
  early.round = 5;
  early.gradient = *EncodeCutTensor(**MakeCodec("dense"), head_grad, f.device_fp(), 0);
  refused(early, "a head gradient for batch 0 answers no batch in flight");
  Result<Message> middle = server->OnMessage("edge-1", good);
  ASSERT_TRUE(middle.ok()) << middle.status();
  refused(good, "batch 0's head gradient was next");
  Result<std::vector<float>> out = channel.Middle(std::get<SplitActivations>(*middle), 3 * mid);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(channel.Middle(std::get<SplitActivations>(*middle), 3 * mid - 1).ok());
  SplitGradient up = *channel.HeadGradient(head_grad, 6.0, 1);
  SplitGradient wrong = up;
  wrong.gradient =
      *EncodeCutTensor(**MakeCodec("dense"), std::vector<float>(2 * mid, 0.0f), f.device_fp(), 0);
  refused(wrong, "the head gradient of batch 0");
  EXPECT_EQ(server->stats().batches, 0u);
  Result<Message> down = server->OnMessage("edge-1", up);
  ASSERT_TRUE(down.ok()) << down.status();
  Result<CutGradient> g = channel.Gradient(std::get<SplitGradient>(*down));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->gradient.size(), acts.size());
  EXPECT_EQ(g->loss_sum, 6.0);  // the head's, echoed
  EXPECT_EQ(server->stats().batches, 1u);
  refused(up, "a head gradient for batch 0 answers no batch in flight");  // twice
  // A classic split's server takes no head gradient; a U-shape needs SFLV1.
  Fixture classic;
  auto plain = classic.Server(SplitMode::kSflV1);
  plain->OpenRound(5, classic.fit, {"edge-1"});
  Result<Message> r = plain->OnMessage("edge-1", up);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not U-shaped"), std::string::npos) << r.status().message();
  auto v2 = SplitServer::Create({f.split, SplitMode::kSflV2, "dense", 1}, f.server_init);
  ASSERT_FALSE(v2.ok());
  EXPECT_NE(v2.status().message().find("needs split.mode = 'sflv1'"), std::string::npos);
}

TEST(SplitServerTest, RefusesAnErrorFeedbackCodecAndAnUnknownMode) {
  Fixture f;
  auto s = SplitServer::Create({f.split, SplitMode::kSflV1, "topk(0.1)", 1}, f.server_init);
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(ParseSplitMode("sflv3").ok());
  EXPECT_EQ(*ParseSplitMode("sflv2"), SplitMode::kSflV2);
}

}  // namespace
}  // namespace tributary
