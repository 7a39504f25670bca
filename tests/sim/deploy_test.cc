// Deployment mode against the in-process simulator: the same small deterministic experiment run
// as real tributary-coordinator and tributary-client processes over mutual TLS on loopback gives
// exactly the same accuracy sequence and final model, with a dense run on Fashion-MNIST and with a
// compressed one (top-k updates with error-feedback residuals, a q8 download) on synthetic data.
// Settings deployment cannot honour are refused by name.
#include <gtest/gtest.h>

#include "../client/temp_dir.h"
#include "sim/deploy.h"
#include "train/data/data_config.h"

namespace tributary {
namespace {

void ExpectDeploymentMatchesInProcess(const SimConfig& c) {
  Result<DataSplits> data = LoadDataSplits(c.data, true, true);
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
    EXPECT_EQ(deployed->rounds[i].accepted, c.run.round.clients_per_round);
    EXPECT_EQ(deployed->rounds[i].dropped, 0);
  }
  EXPECT_EQ(deployed->model_hash, local->model_hash);
  EXPECT_NE(deployed->model_hash, 0u);
  EXPECT_GT(local->rounds.back().test_accuracy, 0.5);
}

// 3 clients of Fashion-MNIST (3,000 examples, Dirichlet 0.5), all in each of 3 rounds of one epoch.
SimConfig ThreeFashionMnistClients() {
  SimConfig c;
  c.data.dataset = "fashion-mnist";
  c.data.train_examples = 3000;
  c.data.test_examples = 1000;
  c.data.partition = "dirichlet:0.5";
  c.data.num_clients = 3;
  c.data.seed = 11;
  c.run.round.clients_per_round = 3;
  c.run.round.rounds = 3;
  c.run.round.fit.epochs = 1;
  c.run.round.fit.lr = 0.05f;
  c.run.round.seed = 11;
  c.run.round.round_timeout = std::chrono::seconds(120);
  return c;
}

TEST(DeployTest, RealProcessesMatchTheInProcessRun) {
  testing::TempDir dir;
  SimConfig c = ThreeFashionMnistClients();
  c.report_dir = dir.path();
  ExpectDeploymentMatchesInProcess(c);
}

TEST(DeployTest, CompressedUpdatesResidualsAndAQuantizedDownloadMatchToo) {
  testing::TempDir dir;
  SimConfig c;
  c.data.dataset = "synthetic";
  c.data.train_examples = 2000;
  c.data.test_examples = 500;
  c.data.partition = "dirichlet:0.5";
  c.data.num_clients = 3;
  c.data.seed = 5;
  c.run.round.clients_per_round = 3;
  c.run.round.rounds = 4;
  c.run.round.fit.epochs = 2;
  c.run.round.fit.lr = 0.1f;
  c.run.round.fit.batch_size = 16;
  c.run.round.codec = "topk(0.1)+q8";  // error feedback: a residual per client between rounds
  c.run.round.download_codec = "q8";
  c.run.round.round_timeout = std::chrono::seconds(120);
  c.report_dir = dir.path();
  ExpectDeploymentMatchesInProcess(c);
}

// Split learning between real processes: each client is started with split.enabled and the run's
// cut and head (it was started without them, refused at Hello, and the deployment waited out its
// deadlines in silence). U-shaped SFLV1 gives the in-process model bitwise.
TEST(DeployTest, SplitLearningMatchesTheInProcessRun) {
  testing::TempDir dir;
  SimConfig c = ThreeFashionMnistClients();
  c.run.round.split.mode = "sflv1";
  c.run.round.split.head = 4;
  c.report_dir = dir.path();
  ExpectDeploymentMatchesInProcess(c);
}

// Clients that all exit while the run goes on end the deployment at once, naming why (here a
// "client" that exits 1 at once), instead of after rounds x (deadline + 60 s).
TEST(DeployTest, ClientsThatAllExitEndTheDeploymentAtOnceNamingWhy) {
  testing::TempDir dir;
  SimConfig c;
  c.data.dataset = "synthetic";
  c.data.train_examples = 600;
  c.data.test_examples = 100;
  c.data.num_clients = 2;
  c.run.round.clients_per_round = 2;
  c.run.round.rounds = 3;
  c.report_dir = dir.path();
  DeployOptions opts;
  opts.coordinator_bin = TRIBUTARY_COORDINATOR_BIN;
  opts.client_bin = "/bin/false";
  const auto t0 = std::chrono::steady_clock::now();
  Result<SimResult> r = RunDeployment(c, opts);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status();
  EXPECT_NE(r.status().message().find("every tributary-client exited before the run ended "
                                      "(client-0: status 1"),
            std::string::npos)
      << r.status();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
}

TEST(DeployTest, SettingsThatCannotTakeEffectAreRefusedByName) {
  const std::pair<const char*, const char*> cases[] = {
      {"hetero.dropout", "key 'hetero.dropout' has no effect in deployment mode"},
      {"attack.kind", "key 'attack.kind' has no effect in deployment mode"},
      {"residual.keep_fraction", "key 'residual.keep_fraction' has no effect"},
      {"sim.threads", "key 'sim.threads' has no effect"},
      {"sim.trainer", "key 'sim.trainer' = 'noop'"},
      {"data.partition", "key 'data.partition' = 'replacement:5'"},
  };
  for (const auto& [key, message] : cases) {
    SimConfig c;
    c.data.num_clients = 10;
    const std::string k = key;
    if (k == "hetero.dropout") c.hetero.dropout = 0.1;
    if (k == "attack.kind") {
      c.attack.kind = "sign_flip";
      c.attack.fraction = 0.2;
    }
    if (k == "residual.keep_fraction") c.residual_keep_fraction = 0.5;
    if (k == "sim.threads") c.threads = 2;
    if (k == "sim.trainer") c.trainer = "noop";
    if (k == "data.partition") c.data.partition = "replacement:5";
    const Status s = CheckDeployable(c);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << key;
    EXPECT_NE(s.message().find(message), std::string::npos) << s;
  }
  SimConfig ok;
  ok.data.num_clients = 10;
  ok.run.round.download_codec = "q8";  // run.* keys take effect
  ok.run.round.codec = "topk(0.01)";
  EXPECT_TRUE(CheckDeployable(ok).ok());
}

}  // namespace
}  // namespace tributary
