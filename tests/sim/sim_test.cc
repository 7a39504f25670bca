// The in-process simulator: determinism across thread counts, heterogeneity (dropouts,
// unreachable clients, stragglers judged in simulated time), population scale within the memory
// budget, error-feedback residuals, and configuration errors. Synthetic data keeps it fast.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "core/process_stats.h"
#include "sim/population.h"
#include "sim/residual_store.h"
#include "sim/simulator.h"
#include "sim_test_util.h"
#include "tests/core/log_capture.h"
#include "tests/core/progress_lines.h"
#include "train/data/data_config.h"
#include "tributary/safetensors.h"

namespace tributary {
namespace {

SimConfig SmallSynthetic() { return testing::SmallSyntheticConfig(); }

Result<SimResult> RunSim(const SimConfig& c) { return testing::RunSimulation(c); }

std::vector<double> Accuracies(const SimResult& r) {
  std::vector<double> out;
  for (const SimRound& x : r.rounds) out.push_back(x.test_accuracy);
  return out;
}

TEST(SimulatorTest, LearnsAndIsDeterministicAcrossThreadCounts) {
  SimConfig c = SmallSynthetic();
  std::vector<SimResult> runs;
  for (int threads : testing::ThreadCountsToCompare({1, 3})) {
    c.threads = threads;
    Result<SimResult> r = RunSim(c);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    runs.push_back(std::move(*r));
  }
  const SimResult& one = runs[0];
  ASSERT_EQ(one.rounds.size(), 4u);
  for (size_t t = 1; t < runs.size(); ++t) {
    EXPECT_EQ(one.model_hash, runs[t].model_hash);
    EXPECT_EQ(Accuracies(one), Accuracies(runs[t]));
    for (size_t i = 0; i < one.rounds.size(); ++i) {
      EXPECT_EQ(one.rounds[i].bytes_up, runs[t].rounds[i].bytes_up);
      EXPECT_DOUBLE_EQ(one.rounds[i].sim_clock, runs[t].rounds[i].sim_clock);
    }
  }
  // Synthetic classes are easy: 4 rounds of FedAvg lift accuracy far above chance (10%).
  EXPECT_GT(one.rounds.back().test_accuracy, 0.6);
  EXPECT_GT(one.rounds.back().test_accuracy, one.rounds.front().test_accuracy);
  // Every round's 5 clients sent a dense update: at least 4 bytes per parameter, framed.
  const uint64_t params = one.final_model.size();
  EXPECT_GE(one.rounds[0].bytes_up, 5 * 4 * params);
  EXPECT_LT(one.rounds[0].bytes_up, 5 * (4 * params + 4096));
  EXPECT_GE(one.rounds[0].bytes_down, 5 * 4 * params);
  EXPECT_LT(one.rounds[0].bytes_down, 5 * (4 * params + 4096));
}

// A model file with dropout and a residual connection: the same model hash on 1 and 3 threads
// (each fit draws its masks from its own seed, whatever thread runs it), and another one without
// the dropout (the masks did change the training).
TEST(SimulatorTest, DropoutAndResidualModelsAreBitwiseTheSameOnAnyThreadCount) {
  const std::string path = ::testing::TempDir() + "/sim_dropout_residual.toml";
  const auto write = [&](const char* rate) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fprintf(f,
                 "name = \"dropout_residual\"\nlayers = [\n  { type = \"flatten\" },\n"
                 "  { type = \"dense\", units = 32 },\n  { type = \"relu\" },\n"
                 "  { type = \"dropout\", rate = %s },\n  { type = \"dense\", units = 32 },\n"
                 "  { type = \"add\", from = 2 },\n  { type = \"dense\" },\n]\n",
                 rate);
    std::fclose(f);
  };
  write("0.3");
  SimConfig c = SmallSynthetic();
  c.run.model = path;
  c.run.round.rounds = 2;
  c.threads = 1;
  const SimResult one = testing::RunSimulationOrFail(c);
  c.threads = 3;
  const SimResult three = testing::RunSimulationOrFail(c);
  EXPECT_EQ(one.model_hash, three.model_hash);
  EXPECT_EQ(Accuracies(one), Accuracies(three));
  write("0");
  const SimResult kept = testing::RunSimulationOrFail(c);
  EXPECT_NE(kept.model_hash, one.model_hash);
  EXPECT_GT(one.rounds.back().test_accuracy, 0.3);  // it learns through the dropout
  std::remove(path.c_str());
}

TEST(SimulatorTest, SameSeedSameResultDifferentSeedDifferentResult) {
  TRIB_SKIP_UNDER_TSAN("SimulatorTest.LearnsAndIsDeterministicAcrossThreadCounts");
  SimConfig c = SmallSynthetic();
  c.run.round.rounds = 2;
  Result<SimResult> a = RunSim(c), b = RunSim(c);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->model_hash, b->model_hash);
  c.run.round.seed = 8;
  Result<SimResult> d = RunSim(c);
  ASSERT_TRUE(d.ok());
  EXPECT_NE(a->model_hash, d->model_hash);
}

TEST(SimulatorTest, DropoutsUnreachableClientsAndStragglersAreHandled) {
  TRIB_SKIP_UNDER_TSAN("SimulatorTest.LearnsAndIsDeterministicAcrossThreadCounts");
  SimConfig c = SmallSynthetic();
  c.run.round.rounds = 6;
  c.run.round.clients_per_round = 6;
  c.run.round.over_selection = 1.5;  // 9 selected per attempt
  c.run.round.min_completed = 3;
  // 30% of clients are so slow (10 samples/s, ~10 s for 100 examples) that they miss a 5 s
  // deadline; the rest finish in well under a second.
  c.hetero.speed_tiers = "fast:0.7:1000,slow:0.3:10";
  c.run.round.round_timeout = std::chrono::seconds(5);
  c.hetero.availability = 0.8;
  c.hetero.dropout = 0.15;
  c.hetero.latency_ms = 20;
  c.hetero.up_mbps = 50;
  c.hetero.down_mbps = 100;
  Result<SimResult> r = RunSim(c);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->rounds.size(), 6u);
  int64_t unavailable = 0, dropouts = 0, late = 0;
  for (const SimRound& x : r->rounds) {
    unavailable += x.unavailable;
    dropouts += x.dropouts;
    late += x.stragglers;
    EXPECT_GE(x.accepted, 3);
    EXPECT_LE(x.accepted, 6);
    // Judged in simulated time: a round never lasts longer than its deadline per attempt.
    EXPECT_LE(x.sim_seconds, 5.0 * x.attempts + 1e-9);
    EXPECT_GT(x.sim_seconds, 0.02);  // at least one latency
  }
  EXPECT_GT(unavailable, 0);
  EXPECT_GT(dropouts, 0);
  EXPECT_GT(late, 0);
  // The simulated clock only moves forward and sums the rounds.
  double clock = 0;
  for (const SimRound& x : r->rounds) {
    clock += x.sim_seconds;
    EXPECT_NEAR(x.sim_clock, clock, 1e-6);
  }
  // Training still works with a third of the updates missing.
  EXPECT_GT(r->rounds.back().test_accuracy, 0.5);
  // And the same heterogeneous run is reproducible.
  Result<SimResult> again = RunSim(c);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->model_hash, r->model_hash);
}

TEST(SimulatorTest, FailedAttemptsAreRetriedWithAFreshSelection) {
  TRIB_SKIP_UNDER_TSAN("SimulatorTest.LearnsAndIsDeterministicAcrossThreadCounts");
  SimConfig c = SmallSynthetic();
  c.run.round.rounds = 3;
  c.run.round.clients_per_round = 5;
  c.run.round.min_completed = 5;
  c.hetero.availability = 0.75;  // 5 of 5 reachable only ~24% of the time
  Result<SimResult> r = RunSim(c);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  int64_t attempts = 0;
  for (const SimRound& x : r->rounds) {
    attempts += x.attempts;
    EXPECT_EQ(x.accepted, 5);
  }
  EXPECT_GT(attempts, 3);
}

TEST(SimulatorTest, HundredThousandClientsFitInAKibibyteEach) {
  TRIB_SKIP_UNDER_TSAN("SimulatorTest.LearnsAndIsDeterministicAcrossThreadCounts");
  SimConfig c;
  c.data.dataset = "synthetic";
  c.data.train_examples = 5000;
  c.data.test_examples = 100;
  c.data.partition = "replacement:20";
  c.data.num_clients = 100000;
  c.run.round.clients_per_round = 100;
  c.run.round.rounds = 2;
  c.trainer = "noop";
  c.run.eval_every = 0;
  Result<DataSplits> data = LoadDataSplits(c.data, true, true);
  ASSERT_TRUE(data.ok());
  Result<std::unique_ptr<Simulator>> sim = Simulator::Create(c, *data);
  ASSERT_TRUE(sim.ok()) << sim.status().ToString();
  const uint64_t before = CurrentRssBytes();
  ASSERT_TRUE((*sim)->Join().ok());
  const uint64_t after = CurrentRssBytes();
  ASSERT_GT(before, 0u);
  const double per_client = static_cast<double>(after - std::min(after, before)) / 1e5;
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  // Sanitizer shadow memory inflates RSS; the bound holds for the uninstrumented build (ci).
  EXPECT_LE(per_client, 4096.0) << "RSS per idle client, with a sanitizer's shadow memory";
#else
  EXPECT_LE(per_client, 1024.0) << "RSS per idle client";
#endif
  EXPECT_EQ((*sim)->engine().registry().size(), 100000u);
  Result<SimResult> r = (*sim)->Run();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->rounds.size(), 2u);
  EXPECT_EQ(r->rounds[0].accepted, 100);
  EXPECT_EQ(r->rounds[1].accepted, 100);
}

// "+noise:SIGMA" (NIID-Bench's feature skew): client i of N trains on its examples plus Gaussian
// noise of standard deviation SIGMA * i / (N - 1); the examples it holds are the ones without it.
TEST(PopulationTest, FeatureNoiseGrowsWithTheClientIndex) {
  DataConfig d;
  d.dataset = "synthetic";
  d.train_examples = 2000;
  d.test_examples = 10;
  Result<DataSplits> data = LoadDataSplits(d, true, false);
  ASSERT_TRUE(data.ok()) << data.status();
  Result<std::unique_ptr<Population>> noisy =
      Population::Create(data->train, "iid+noise:0.4", 5, 3);
  Result<std::unique_ptr<Population>> clean = Population::Create(data->train, "iid", 5, 3);
  ASSERT_TRUE(noisy.ok()) << noisy.status();
  ASSERT_TRUE(clean.ok());
  for (uint64_t c = 0; c < 5; ++c) {
    ASSERT_EQ((*noisy)->Indices(c), (*clean)->Indices(c));
    EXPECT_DOUBLE_EQ((*noisy)->noise_level(c), 0.1 * static_cast<double>(c));
    const Dataset a = (*noisy)->Materialize(c), b = (*clean)->Materialize(c);
    ASSERT_EQ(a.images.size(), b.images.size());
    double sum_sq = 0;
    for (size_t i = 0; i < a.images.size(); ++i) {
      const double e = static_cast<double>(a.images[i]) - b.images[i];
      sum_sq += e * e;
    }
    const double sd = std::sqrt(sum_sq / static_cast<double>(a.images.size()));
    // Client 0 is clean; the others' noise has their level as its deviation (within 3%).
    if (c == 0) {
      EXPECT_EQ(a.images, b.images);
    } else {
      EXPECT_NEAR(sd, 0.1 * static_cast<double>(c), 0.003 * static_cast<double>(c)) << c;
    }
    const Dataset again = (*noisy)->Materialize(c);
    EXPECT_EQ(again.images, a.images) << "the same noise every time the client is materialized";
  }
  Result<std::unique_ptr<Population>> bad = Population::Create(data->train, "iid+noise:no", 5, 3);
  EXPECT_NE(bad.status().message().find("noise:SIGMA"), std::string::npos)
      << bad.status().message();
}

TEST(SimulatorTest, ErrorFeedbackResidualsFollowEachClient) {
  SimConfig c = SmallSynthetic();
  c.run.round.codec = "topk(0.05)";
  c.data.num_clients = 10;
  c.run.round.clients_per_round = 5;
  c.run.round.rounds = 3;
  Result<DataSplits> data = LoadDataSplits(c.data, true, true);
  ASSERT_TRUE(data.ok());
  Result<std::unique_ptr<Simulator>> sim = Simulator::Create(c, *data);
  ASSERT_TRUE(sim.ok()) << sim.status().ToString();
  Result<SimResult> r = (*sim)->Run();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // Each client that trained keeps a dense residual of the model's size.
  const size_t kept = (*sim)->residuals().size();
  EXPECT_GE(kept, 5u);
  EXPECT_LE(kept, 10u);
  EXPECT_EQ((*sim)->residuals().bytes(), kept * r->final_model.size() * sizeof(float));
  // A top-5% update is far smaller than a dense one.
  EXPECT_LT(r->rounds[0].bytes_up, r->rounds[0].bytes_down / 5);
}

// A run of a model the simulator cannot train or evaluate (run.model empty) starts from its weights
// file of any layout; the noop trainer works for any layout, and every codec does.
TEST(SimulatorTest, AModelOnlyTheClientsKnowStartsFromItsWeightsFile) {
  ModelWeights init = *ModelWeights::Create({{"encoder/0.W", {8, 4}}, {"head:b", {3}}});
  for (size_t i = 0; i < init.size(); ++i) init.data()[i] = 0.25f * static_cast<float>(i) - 3.0f;
  const std::string path = ::testing::TempDir() + "sim_initial_model.safetensors";
  ASSERT_TRUE(SaveSafetensors(init, path).ok());
  SimConfig c = SmallSynthetic();
  c.run.model = "";
  c.run.initial_model = path;
  c.run.round.rounds = 2;
  c.run.round.codec = "topk(0.5)+q8";
  c.trainer = "noop";
  Result<SimResult> r = RunSim(c);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->rounds.size(), 2u);
  for (const SimRound& round : r->rounds) {
    EXPECT_EQ(round.accepted, 5);
    EXPECT_FALSE(round.evaluated);  // eval.every = 1, but there is no model to evaluate
  }
  EXPECT_EQ(r->final_model, init);  // noop updates are zero: the weights come back bit for bit

  c.trainer = "native";
  const Status native = RunSim(c).status();
  EXPECT_EQ(native.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(native.message().find("'sim.trainer' = 'native' trains run.model"), std::string::npos)
      << native;
  std::remove(path.c_str());
}

// download_codec = "q8": each client downloads n one-byte codes plus a float scale per 512 values
// (about a quarter of dense), trains from the decoded model, and the run learns as well as dense.
TEST(SimulatorTest, Q8DownloadCutsBytesDownAndStillLearns) {
  TRIB_SKIP_UNDER_TSAN("SimulatorTest.LearnsAndIsDeterministicAcrossThreadCounts");
  SimConfig c = SmallSynthetic();
  c.run.round.rounds = 5;
  Result<SimResult> dense = RunSim(c);
  ASSERT_TRUE(dense.ok()) << dense.status().ToString();
  c.run.round.download_codec = "q8";
  Result<SimResult> q8 = RunSim(c);
  ASSERT_TRUE(q8.ok()) << q8.status().ToString();
  const uint64_t n = q8->final_model.size();
  const uint64_t encoded = n + 4 * ((n + 511) / 512);
  for (size_t i = 0; i < q8->rounds.size(); ++i) {
    // 5 clients a round, each one framed TaskAssignment (fields and frame headers < 4 KiB).
    EXPECT_GE(q8->rounds[i].bytes_down, 5 * encoded) << i;
    EXPECT_LT(q8->rounds[i].bytes_down, 5 * (encoded + 4096)) << i;
    EXPECT_LT(static_cast<double>(q8->rounds[i].bytes_down),
              0.27 * static_cast<double>(dense->rounds[i].bytes_down))
        << i;
  }
  EXPECT_GT(q8->rounds.back().test_accuracy, 0.6);
  EXPECT_NEAR(q8->rounds.back().test_accuracy, dense->rounds.back().test_accuracy, 0.05);
  // Uploads are unchanged in size (the dense update codec).
  EXPECT_EQ(q8->rounds[0].bytes_up, dense->rounds[0].bytes_up);
}

TEST(ResidualStoreTest, KeepsTheLargestEntriesAndExpiresOldOnes) {
  ResidualStore store(/*max_age_rounds=*/2, /*keep_fraction=*/0.25);
  CodecState s;
  s.spec = "topk(0.1)";
  s.residual = {0.1f, -4.0f, 0.2f, 3.0f, 0.0f, 0.3f, -0.05f, 1.0f};
  store.Put(7, 1, s);
  EXPECT_EQ(store.bytes(), 2 * (sizeof(uint32_t) + sizeof(float)));  // 25% of 8 = 2 entries
  std::optional<CodecState> got = store.Get(7, 2);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->spec, "topk(0.1)");
  EXPECT_EQ(got->residual, (std::vector<float>{0, -4.0f, 0, 3.0f, 0, 0, 0, 0}));
  EXPECT_FALSE(store.Get(8, 2).has_value());
  EXPECT_TRUE(store.Get(7, 3).has_value());   // age 2: kept
  EXPECT_FALSE(store.Get(7, 4).has_value());  // age 3: expired
  store.Expire(4);
  EXPECT_EQ(store.size(), 0u);
  EXPECT_EQ(store.bytes(), 0u);
}

// Applies `sets` (key=value) to a default SimConfig through its schema, then validates.
Status Configure(std::initializer_list<const char*> sets, SimConfig* c) {
  ConfigSchema schema("tributary-sim");
  BindSimConfig(schema, c);
  for (const char* kv : sets) TRIB_RETURN_IF_ERROR(schema.Assign(kv));
  return c->Validate();
}

TEST(SimConfigTest, OverridesReachEveryKeyWithTheSharedNames) {
  SimConfig c;
  ASSERT_TRUE(Configure({"run.rounds=7", "run.codec=topk(0.01)+q8", "hetero.dropout=0.25",
                         "data.partition=\"shards:2\"", "data.num_clients=50",
                         "run.clients_per_round=5", "fit.momentum=0.5"},
                        &c)
                  .ok());
  EXPECT_EQ(c.run.round.rounds, 7);
  EXPECT_EQ(c.run.round.codec, "topk(0.01)+q8");
  EXPECT_DOUBLE_EQ(c.hetero.dropout, 0.25);
  EXPECT_EQ(c.data.partition, "shards:2");
  EXPECT_EQ(c.data.num_clients, 50);
  EXPECT_EQ(c.run.round.fit.momentum, 0.5f);
  // The simulator's defaults, and the run it hands to the engine.
  SimConfig d;
  EXPECT_EQ(d.run.round.rounds, 20);
  EXPECT_EQ(d.run.round.max_round_attempts, 50);
  EXPECT_EQ(d.EffectiveRun().round.min_available, d.data.num_clients);
}

TEST(SimConfigTest, ErrorsNameTheKey) {
  auto configure = [](std::initializer_list<const char*> sets) {
    SimConfig c;
    return Configure(sets, &c).message();
  };
  EXPECT_NE(configure({"clientz=3"}).find("unknown key 'clientz'"), std::string::npos);
  EXPECT_NE(configure({"hetero.dropuot=0.1"}).find("hetero.dropuot"), std::string::npos);
  EXPECT_NE(configure({"run.clients_per_round=500"}).find("run.clients_per_round"),
            std::string::npos);
  EXPECT_NE(configure({"fit.lr=-1.0"}).find("fit.lr"), std::string::npos);
  EXPECT_NE(configure({"fit.momentum=1.0"}).find("fit.momentum"), std::string::npos);
  EXPECT_NE(configure({"run.rounds=ten"}).find("run.rounds"), std::string::npos);
  EXPECT_EQ(configure({"data.num_clients=50", "run.clients_per_round=5", "hetero.dropout=0.1"}),
            "");
  EXPECT_NE(configure({"run.download_codec=q2"}).find("codec 'q2' cannot carry a global model"),
            std::string::npos);
  EXPECT_EQ(configure({"run.download_codec=q8"}), "");
  // The flat keys of earlier versions name their new key; keys without meaning here say why.
  EXPECT_NE(configure({"per_round=5"}).find("key 'per_round' was renamed 'run.clients_per_round'"),
            std::string::npos);
  EXPECT_NE(configure({"run.min_available=3"}).find("is not used by tributary-sim: every virtual"),
            std::string::npos);
  EXPECT_NE(configure({"output.event_log=x"}).find("sim.report_dir"), std::string::npos);
  EXPECT_EQ(configure({"output.checkpoint_dir=x"}), "");  // checkpoints for --resume
  SimConfig from_file;
  ConfigSchema schema("tributary-sim");
  BindSimConfig(schema, &from_file);
  Result<Config> doc = Config::Parse("rounds = 5\n", "old.toml");
  ASSERT_TRUE(doc.ok());
  EXPECT_NE(schema.Load(*doc).message().find("old.toml: key 'rounds' was renamed 'run.rounds'"),
            std::string::npos);

  SimConfig c = SmallSynthetic();
  c.hetero.speed_tiers = "fast:0.5:100,slow:0.4:10";
  Result<DataSplits> data = LoadDataSplits(c.data, true, true);
  ASSERT_TRUE(data.ok());
  Result<std::unique_ptr<Simulator>> sim = Simulator::Create(c, *data);
  ASSERT_FALSE(sim.ok());
  EXPECT_NE(sim.status().message().find("hetero.speed_tiers"), std::string::npos);
  c = SmallSynthetic();
  c.data.partition = "shards:0";
  sim = Simulator::Create(c, *data);
  ASSERT_FALSE(sim.ok());
  EXPECT_NE(sim.status().message().find("shards:0"), std::string::npos);
  c = SmallSynthetic();
  c.run.strategy = "krum(f=2)";  // needs n > 2f + 2 = 6 updates, but rounds close with 5
  sim = Simulator::Create(c, *data);
  ASSERT_FALSE(sim.ok());
  EXPECT_NE(sim.status().message().find("min_completed"), std::string::npos);
}

// Join registers every client with the engine and reports its progress (forced to log for every
// client here; a real run logs only past a second).
TEST(SimulatorTest, JoinReportsItsProgressOverTheClients) {
  SimConfig c = SmallSynthetic();
  Result<DataSplits> data = LoadDataSplits(c.data, true, true);
  ASSERT_TRUE(data.ok()) << data.status();
  testing::ForceProgressLines every_client;
  testing::LogCapture log(LogLevel::kInfo);
  Result<std::unique_ptr<Simulator>> sim = Simulator::Create(c, *data);
  ASSERT_TRUE(sim.ok()) << sim.status();
  ASSERT_TRUE((*sim)->Join().ok());
  const std::string prefix = "info|registering the simulated clients";
  std::vector<std::string> lines;
  for (const std::string& line : log.lines())
    if (line.rfind(prefix, 0) == 0) lines.push_back(line);
  ASSERT_EQ(lines.size(), 21u);  // one per client, and the closing line
  EXPECT_EQ(lines[0].rfind(prefix + ": 1/20 clients (5%), ", 0), 0u) << lines[0];
  EXPECT_EQ(lines[9].rfind(prefix + ": 10/20 clients (50%), ", 0), 0u) << lines[9];
  EXPECT_EQ(lines[19].rfind(prefix + ": 20/20 clients (100%), ", 0), 0u) << lines[19];
  EXPECT_EQ(lines[20].rfind(prefix + " done: 20 clients in ", 0), 0u) << lines[20];
}

}  // namespace
}  // namespace tributary
