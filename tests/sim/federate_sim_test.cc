// run.federate = "unfrozen" in the simulator (docs/models.md, "Federating only the unfrozen
// tensors"): with a model whose first dense layer is frozen, the run that aggregates and sends only
// the other tensors gives bit for bit the model of the run that federates every tensor (a frozen
// tensor's delta is exactly zero, so the other tensors' sums are the same sums), under FedAvg,
// SCAFFOLD (the control variates cover the federated tensors only) and asynchronous steps; it
// sends the frozen tensors down once per client and never up, so its rounds move fewer bytes; a
// model that freezes nothing runs as before; and the runs it cannot carry are refused naming why.
#include <gtest/gtest.h>

#include <fstream>

#include "sim_test_util.h"
#include "train/model_file.h"
#include "train/model_spec.h"

namespace tributary {
namespace {

// flatten, dense 24 (frozen when `frozen`), relu, dense 10 on 8x8 images: 1,560 of the 1,810
// parameters in the first dense layer.
std::string WriteModel(const std::string& name, bool frozen) {
  const std::string path = ::testing::TempDir() + "/" + name + ".toml";
  std::ofstream f(path);
  f << "name = \"" << name << "\"\nlayers = [\n  { type = \"flatten\" },\n"
    << "  { type = \"dense\", units = 24, name = \"body\"" << (frozen ? ", frozen = true" : "")
    << " },\n  { type = \"relu\" },\n  { type = \"dense\", units = 10, name = \"head\" },\n]\n";
  return path;
}

SimConfig FederateConfig(bool frozen) {
  SimConfig c = testing::SmallSyntheticConfig();
  c.data.num_clients = 8;
  c.run.round.clients_per_round = 4;
  c.run.round.rounds = 3;
  c.run.round.fit.epochs = 1;
  c.run.model = WriteModel(frozen ? "frozen_body" : "free_body", frozen);
  return c;
}

uint64_t Sum(const SimResult& r, uint64_t SimRound::*field) {
  uint64_t n = 0;
  for (const SimRound& round : r.rounds) n += round.*field;
  return n;
}

void ExpectSameModelFewerBytes(SimConfig c, const char* what) {
  const SimResult all = testing::RunSimulationOrFail(c);
  c.run.round.federate = "unfrozen";
  const SimResult part = testing::RunSimulationOrFail(c);
  ASSERT_EQ(all.rounds.size(), part.rounds.size()) << what;
  ASSERT_FALSE(all.rounds.empty()) << what;
  EXPECT_EQ(part.final_model.content_hash(), all.final_model.content_hash()) << what;
  EXPECT_TRUE(part.final_model == all.final_model) << what;
  // The frozen body (1,560 of 1,810 floats) never goes up, and goes down once per client.
  const uint64_t up_all = Sum(all, &SimRound::bytes_up), up_part = Sum(part, &SimRound::bytes_up);
  const uint64_t down_all = Sum(all, &SimRound::bytes_down);
  const uint64_t down_part = Sum(part, &SimRound::bytes_down);
  std::printf("%s: up %llu -> %llu bytes, down %llu -> %llu bytes\n", what,
              static_cast<unsigned long long>(up_all), static_cast<unsigned long long>(up_part),
              static_cast<unsigned long long>(down_all),
              static_cast<unsigned long long>(down_part));
  EXPECT_LT(static_cast<double>(up_part), 0.2 * static_cast<double>(up_all)) << what;
  EXPECT_LT(down_part, down_all) << what;
  EXPECT_GT(part.rounds.back().accepted, 0) << what;
}

TEST(FederateSimTest, FedAvgOnTheUnfrozenTensorsIsFedAvgOnAllOfThemWithFewerBytes) {
  ExpectSameModelFewerBytes(FederateConfig(true), "fedavg");
}

TEST(FederateSimTest, ScaffoldKeepsControlVariatesOfTheFederatedTensorsOnly) {
  SimConfig c = FederateConfig(true);
  c.run.strategy = "scaffold";
  c.run.round.fit.momentum = 0.0f;
  ExpectSameModelFewerBytes(c, "scaffold");
}

TEST(FederateSimTest, AsynchronousStepsToo) {
  SimConfig c = FederateConfig(true);
  c.run.round.mode = "async";
  c.run.round.async.concurrency = 4;
  c.run.round.async.buffer_size = 2;
  c.run.round.rounds = 4;
  ExpectSameModelFewerBytes(c, "async");
}

TEST(FederateSimTest, TheFrozenLayerKeepsItsStartingValues) {
  SimConfig c = FederateConfig(true);
  c.run.round.federate = "unfrozen";
  const SimResult r = testing::RunSimulationOrFail(c);
  Result<ModelSpec> spec = LoadModelFile(c.run.model, Shape3{8, 8, 1}, 10);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  Result<ModelWeights> init = InitWeights(*spec, c.run.init_seed);
  ASSERT_TRUE(init.ok()) << init.status().ToString();
  ASSERT_TRUE(r.final_model.same_layout(*init));
  for (const char* name : {"body.weight", "body.bias"}) {
    const TensorInfo* t = r.final_model.find(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_TRUE(std::equal(r.final_model.data().begin() + t->offset,
                           r.final_model.data().begin() + t->offset + t->numel,
                           init->data().begin() + t->offset))
        << name;
  }
  const TensorInfo* head = r.final_model.find("head.weight");
  ASSERT_NE(head, nullptr);
  EXPECT_FALSE(std::equal(r.final_model.data().begin() + head->offset,
                          r.final_model.data().begin() + head->offset + head->numel,
                          init->data().begin() + head->offset));
}

TEST(FederateSimTest, AModelThatFreezesNothingRunsAsBefore) {
  SimConfig c = FederateConfig(false);
  const SimResult all = testing::RunSimulationOrFail(c);
  c.run.round.federate = "unfrozen";
  const SimResult part = testing::RunSimulationOrFail(c);
  EXPECT_TRUE(part.final_model == all.final_model);
  EXPECT_EQ(Sum(part, &SimRound::bytes_up), Sum(all, &SimRound::bytes_up));
  EXPECT_EQ(Sum(part, &SimRound::bytes_down), Sum(all, &SimRound::bytes_down));
}

TEST(FederateSimTest, RunsItCannotCarryAreRefusedNamingWhy) {
  SimConfig c = FederateConfig(true);
  c.run.round.federate = "some";
  Result<SimResult> r = testing::RunSimulation(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'run.federate' = 'some' must be 'all' or 'unfrozen'"),
            std::string::npos)
      << r.status().ToString();

  c = FederateConfig(true);
  c.run.round.federate = "unfrozen";
  c.run.round.split.mode = "sflv1";
  r = testing::RunSimulation(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cannot be used with split.mode"), std::string::npos)
      << r.status().ToString();

  c = FederateConfig(true);
  c.run.round.federate = "unfrozen";
  c.attack.kind = "sign_flip";
  c.attack.fraction = 0.25;
  r = testing::RunSimulation(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'attack.kind' cannot be used with run.federate"),
            std::string::npos)
      << r.status().ToString();

  // Every layer with parameters frozen: nothing to train.
  c = FederateConfig(true);
  const std::string path = ::testing::TempDir() + "/all_frozen.toml";
  {
    std::ofstream f(path);
    f << "name = \"all_frozen\"\nlayers = [\n  { type = \"flatten\" },\n"
      << "  { type = \"dense\", units = 10, name = \"only\", frozen = true },\n]\n";
  }
  c.run.model = path;
  c.run.round.federate = "unfrozen";
  r = testing::RunSimulation(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nothing to train or aggregate"), std::string::npos)
      << r.status().ToString();
}

}  // namespace
}  // namespace tributary
