// Deployment mode against the in-process simulator: the same small deterministic experiment run
// as real tributary-coordinator and tributary-client processes over mutual TLS on loopback gives
// exactly the same accuracy sequence and final model.
#include <gtest/gtest.h>

#include "../client/temp_dir.h"
#include "sim/deploy.h"
#include "sim/sim_data.h"

namespace tributary {
namespace {

TEST(DeployTest, RealProcessesMatchTheInProcessRun) {
  testing::TempDir dir;
  SimConfig c;
  c.dataset = "fashion-mnist";
  c.train_examples = 3000;
  c.test_examples = 1000;
  c.partition = "dirichlet:0.5";
  c.clients = 3;
  c.per_round = 3;
  c.rounds = 3;
  c.fit.epochs = 1;
  c.fit.lr = 0.05f;
  c.seed = 11;
  c.round_timeout_s = 120;
  c.report_dir = dir.path();

  Result<SimData> data = LoadSimData(c);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  Result<std::unique_ptr<Simulator>> sim = Simulator::Create(c, *data);
  ASSERT_TRUE(sim.ok()) << sim.status().ToString();
  Result<SimResult> local = (*sim)->Run();
  ASSERT_TRUE(local.ok()) << local.status().ToString();

  DeployOptions opts;
  opts.coordinator_bin = TRIBUTARY_COORDINATOR_BIN;
  opts.client_bin = TRIBUTARY_CLIENT_BIN;
  opts.timeout_s = 600;
  Result<SimResult> deployed = RunDeployment(c, opts);
  ASSERT_TRUE(deployed.ok()) << deployed.status().ToString();

  ASSERT_EQ(deployed->rounds.size(), local->rounds.size());
  for (size_t i = 0; i < local->rounds.size(); ++i) {
    ASSERT_TRUE(deployed->rounds[i].evaluated);
    EXPECT_EQ(deployed->rounds[i].test_accuracy, local->rounds[i].test_accuracy)
        << "round " << i + 1;
    EXPECT_EQ(deployed->rounds[i].completed, 3);
  }
  EXPECT_EQ(deployed->model_hash, local->model_hash);
  EXPECT_GT(local->rounds.back().test_accuracy, 0.5);
}

}  // namespace
}  // namespace tributary
