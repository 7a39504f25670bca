// Split learning between real processes (docs/split.md): tributary-coordinator with split.mode and
// tributary-client processes with --split, over mutual TLS on loopback, lenet cut after its first
// block on synthetic data. Each final model (the whole model, output.final_model) is compared with
// a reference this test computes with the native engine:
//   - SFLV2 with one client: centralized training of the whole model on that client's data (the
//     same epochs and SGD, two rounds);
//   - SFLV1 with three clients: per round, each client's whole model trained alone from the
//     round's model, then both parts averaged by the clients' examples (FedAvg);
//   - the same, U-shaped (split.head: the clients also hold the last two dense layers and the
//     labels): the same reference, as the shape moves work and changes no arithmetic.
// Every batch is the client's whole share (full-batch steps), so the clients' shuffles change only
// the order of a sum; the tolerance is 2e-5 on weights of magnitude below 1.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "client/client_config.h"
#include "client/client_data.h"
#include "coordinator/run_events.h"
#include "core/rng.h"
#include "tests/integration/process.h"
#include "tests/integration/tls_process_test.h"
#include "train/model_split.h"
#include "train/native_trainer.h"
#include "tributary/safetensors.h"

namespace tributary {
namespace {

using namespace std::chrono_literals;
using testing::Process;
using testing::WaitFor;
namespace fs = std::filesystem;

constexpr int kTrainExamples = 100;

class SplitRunTest : public testing::TlsProcessTest {
 protected:
  SplitRunTest() : TlsProcessTest("trib_split_") {}
  fs::path final_model() const { return dir_ / "final.safetensors"; }
  int head_ = 0;  // split.head on both sides (0: the classic split)

  // The data and fit settings both sides use.
  static std::vector<std::string> DataArgs(int clients) {
    return {"data.dataset=synthetic",
            "data.train_examples=" + std::to_string(kTrainExamples),
            "data.test_examples=100",
            "data.partition=iid",
            "data.num_clients=" + std::to_string(clients),
            "data.synthetic.height=28",
            "data.synthetic.width=28"};
  }

  std::string StartCoordinator(const std::string& mode, int clients, int rounds, int batch,
                               float momentum) {
    std::ofstream f(dir_ / "coordinator.toml");
    f << "log_level = \"info\"\n[net]\nlisten = \"127.0.0.1:0\"\nheartbeat_interval_s = 1\n"
      << TlsToml() << "[run]\nmodel = \"lenet\"\nseed = 7\nrounds = " << rounds
      << "\nclients_per_round = " << clients << "\nmin_available = " << clients
      << "\nmin_completed = " << clients << "\nround_timeout_s = 120\n"
      << "[split]\nmode = \"" << mode << "\"\npool = 2\nhead = " << head_ << "\n"
      << "[fit]\nepochs = 2\nbatch_size = " << batch << "\nlr = 0.05\nmomentum = " << momentum
      << "\n[eval]\nevery = 0\n[data]\ndataset = \"synthetic\"\ntest_examples = 100\n"
      << "synthetic.height = 28\nsynthetic.width = 28\n"
      << "[output]\ncheckpoint_dir = \"" << (dir_ / "ckpt").string() << "\"\nfinal_model = \""
      << final_model().string() << "\"\nhistory = \"none\"\nready_file = \""
      << (dir_ / "ready").string() << "\"\n";
    f.close();
    return StartCoordinatorProcess({"--config", (dir_ / "coordinator.toml").string()},
                                   "coordinator.log", dir_ / "ready");
  }

  void StartClient(const std::string& addr, int index, int clients) {
    const std::string id = "edge-" + std::to_string(index);
    std::vector<std::string> args = {TRIBUTARY_CLIENT_BIN};
    const std::vector<std::string> tls = ClientTlsArgs(addr, id);
    args.insert(args.end(), tls.begin(), tls.end());
    const std::vector<std::string> rest = {
        "--model",   "lenet", "--split",     "true", "--client-index", std::to_string(index),
        "--threads", "1",     "--log-level", "warn"};
    args.insert(args.end(), rest.begin(), rest.end());
    if (head_ > 0) {
      args.push_back("--split-head");
      args.push_back(std::to_string(head_));
    }
    for (const std::string& kv : DataArgs(clients)) {
      args.push_back("--set");
      args.push_back(kv);
    }
    clients_.push_back(std::make_unique<Process>(args, (dir_ / (id + ".log")).string()));
  }

  // Runs to the end; returns the final (whole) model.
  ModelWeights RunToEnd(const std::string& mode, int clients, int rounds, int batch,
                        float momentum) {
    const std::string addr = StartCoordinator(mode, clients, rounds, batch, momentum);
    for (int i = 0; i < clients; ++i) StartClient(addr, i, clients);
    EXPECT_EQ(coordinator_->Wait(180s), 0) << coordinator_->Log();
    for (auto& c : clients_) EXPECT_EQ(c->Wait(30s), 0) << c->Log();
    std::ifstream in(final_model(), std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
    Result<ModelWeights> w = ParseSafetensors(bytes);
    EXPECT_TRUE(w.ok()) << w.status() << "\n" << coordinator_->Log();
    return w.ok() ? std::move(*w) : ModelWeights();
  }

  // Each round_closed event's split figures, from the run's event log.
  std::vector<SplitRoundReport> SplitFigures() const {
    std::vector<SplitRoundReport> out;
    std::ifstream events(dir_ / "ckpt" / "events.jsonl");
    for (std::string line; std::getline(events, line);) {
      Result<RunEvent> e = RunEventFromJson(nlohmann::json::parse(line));
      EXPECT_TRUE(e.ok()) << line;
      const auto* c = e.ok() ? std::get_if<RoundClosed>(&*e) : nullptr;
      if (c == nullptr) continue;
      EXPECT_TRUE(c->summary.split.has_value()) << line;
      out.push_back(c->summary.split.value_or(SplitRoundReport{}));
    }
    return out;
  }

  // Client i's training share, loaded as tributary-client loads it.
  static std::shared_ptr<const Dataset> Share(int index, int clients) {
    ClientConfig c;
    c.data.dataset = "synthetic";
    c.data.train_examples = kTrainExamples;
    c.data.test_examples = 100;
    c.data.partition = "iid";
    c.data.num_clients = clients;
    c.data.synthetic_height = 28;
    c.data.synthetic_width = 28;
    c.client_index = index;
    Result<ClientData> d = LoadClientData(c);
    EXPECT_TRUE(d.ok()) << d.status();
    return d->train;
  }
};

FitConfig Fit(int batch, float momentum) {
  FitConfig f;
  f.epochs = 2;
  f.batch_size = batch;
  f.lr = 0.05f;
  f.momentum = momentum;
  return f;
}

double MaxDiff(const ModelWeights& a, const ModelWeights& b) {
  double d = 0.0;
  for (size_t i = 0; i < a.size(); ++i)
    d = std::max(d, static_cast<double>(std::fabs(a.data()[i] - b.data()[i])));
  return d;
}

TEST_F(SplitRunTest, Sflv2WithOneClientIsCentralizedTraining) {
  const ModelWeights got = RunToEnd("sflv2", 1, 2, kTrainExamples, 0.0f);
  ASSERT_GT(got.size(), 0u);
  const ModelSpec lenet = *ModelSpecByName("lenet");
  ModelWeights want = *InitWeights(lenet, 1);
  ASSERT_TRUE(want.same_layout(got));
  auto trainer = *NativeTrainer::Create(lenet, Share(0, 1), nullptr, 1);
  for (int round = 0; round < 2; ++round)
    want = trainer->fit(want, Fit(kTrainExamples, 0))->weights;
  const double diff = MaxDiff(got, want);
  std::printf("SFLV2, 1 client, 2 rounds of 2 epochs: max |split - centralized| = %.3g\n", diff);
  EXPECT_LT(diff, 2e-5);
  EXPECT_GT(MaxDiff(got, *InitWeights(lenet, 1)), 1e-3);  // it trained
  const std::string log = coordinator_->Log();
  EXPECT_NE(log.find("split learning (sflv2): model lenet cut before layer 3"), std::string::npos)
      << log;
  EXPECT_NE(log.find("split learning, round 2: 2 batches (200 samples)"), std::string::npos) << log;
  // The event log's round_closed carries each round's split figures: 2 batches of 100 samples,
  // whose dense activations and gradients are 4 bytes a value of the cut, and the server compute.
  const SplitModel split = *CutModel(lenet, 3);
  const uint64_t bytes = 200u * static_cast<uint64_t>(split.cut_shape.numel()) * 4;
  const std::vector<SplitRoundReport> rounds = SplitFigures();
  EXPECT_EQ(rounds.size(), 2u);
  for (const SplitRoundReport& r : rounds) {
    EXPECT_EQ(r.batches, 2u);
    EXPECT_EQ(r.samples, 200u);
    EXPECT_EQ(r.bytes_in, bytes);
    EXPECT_EQ(r.bytes_out, bytes);
    EXPECT_GT(r.server_seconds, 0.0);
  }
}

// SFLV1's reference: per round, each client's whole model trained alone from the round's
// model, then averaged by the clients' examples (FedAvg, summed in double).
ModelWeights Sflv1Reference(int clients, int rounds, int batch, float momentum,
                            const std::function<std::shared_ptr<const Dataset>(int)>& share) {
  const ModelSpec lenet = *ModelSpecByName("lenet");
  ModelWeights model = *InitWeights(lenet, 1);
  for (int round = 0; round < rounds; ++round) {
    std::vector<double> sum(model.size(), 0.0);
    double total = 0.0;
    for (int i = 0; i < clients; ++i) {
      auto data = share(i);
      auto trainer = *NativeTrainer::Create(lenet, data, nullptr, 1);
      const ModelWeights w = trainer->fit(model, Fit(batch, momentum))->weights;
      for (size_t k = 0; k < sum.size(); ++k) sum[k] += data->size() * double{w.data()[k]};
      total += static_cast<double>(data->size());
    }
    for (size_t k = 0; k < sum.size(); ++k) model.data()[k] = static_cast<float>(sum[k] / total);
  }
  return model;
}

TEST_F(SplitRunTest, Sflv1WithThreeClientsMatchesAnIndependentReference) {
  constexpr int kClients = 3, kBatch = 34;  // shares of 34, 33 and 33: one batch an epoch
  const ModelWeights got = RunToEnd("sflv1", kClients, 2, kBatch, 0.5f);
  ASSERT_GT(got.size(), 0u);
  const ModelWeights want =
      Sflv1Reference(kClients, 2, kBatch, 0.5f, [](int i) { return Share(i, kClients); });
  const double diff = MaxDiff(got, want);
  std::printf("SFLV1, 3 clients, 2 rounds of 2 epochs: max |split - reference| = %.3g\n", diff);
  EXPECT_LT(diff, 2e-5);
  EXPECT_GT(MaxDiff(got, *InitWeights(*ModelSpecByName("lenet"), 1)), 1e-3);
}

// The U-shaped split (lenet cut at 3 and 9): the clients hold the first block and the last two
// dense layers with the labels, the coordinator the second block and dense 120. The same
// reference as the classic split's; every batch takes two round trips, and what reaches the
// coordinator is activations and the head's gradients, never a label.
TEST_F(SplitRunTest, AUShapedSflv1WithThreeClientsMatchesTheSameReference) {
  constexpr int kClients = 3, kBatch = 34;
  head_ = 9;
  const ModelWeights got = RunToEnd("sflv1", kClients, 2, kBatch, 0.5f);
  ASSERT_GT(got.size(), 0u);
  const ModelWeights want =
      Sflv1Reference(kClients, 2, kBatch, 0.5f, [](int i) { return Share(i, kClients); });
  const double diff = MaxDiff(got, want);
  std::printf("U-shaped SFLV1, 3 clients, 2 rounds of 2 epochs: max |split - reference| = %.3g\n",
              diff);
  EXPECT_LT(diff, 2e-5);
  EXPECT_GT(MaxDiff(got, *InitWeights(*ModelSpecByName("lenet"), 1)), 1e-3);
  const std::string log = coordinator_->Log();
  EXPECT_NE(log.find("split learning (sflv1, U-shaped): model lenet cut before layers 3 and 9"),
            std::string::npos)
      << log;
  // Per round, 6 batches (3 clients, 2 epochs of one batch) of 200 samples in all; up went the
  // first cut's activations and the head's input gradients, 4 bytes a value, and as many down.
  const SplitModel split = *CutModel(*ModelSpecByName("lenet"), 3, 9);
  const uint64_t bytes =
      200u * static_cast<uint64_t>(split.cut_shape.numel() + split.head_shape.numel()) * 4;
  const std::vector<SplitRoundReport> rounds = SplitFigures();
  EXPECT_EQ(rounds.size(), 2u);
  for (const SplitRoundReport& r : rounds) {
    EXPECT_EQ(r.batches, 6u);
    EXPECT_EQ(r.samples, 200u);
    EXPECT_EQ(r.bytes_in, bytes);
    EXPECT_EQ(r.bytes_out, bytes);
  }
}

}  // namespace
}  // namespace tributary
