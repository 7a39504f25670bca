// examples/configs/sim.toml, the demo (100 Fashion-MNIST clients, 10 per round, 100 rounds of
// `mlp`), with secure aggregation: its final test accuracy is within 0.3 points of the same run
// without it. About 40 s on 2 cores, so its own binary: the sanitizer passes leave it out.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "core/config.h"
#include "core/config_schema.h"
#include "sim/simulator.h"
#include "sim_test_util.h"

namespace tributary {
namespace {

// examples/configs/sim.toml: 100 Fashion-MNIST clients, 10 per round, 100 rounds of `mlp`.
TEST(SimDemoTest, TheDemoRunEndsWithinAThirdOfAPointOfThePlaintextRun) {
  SimConfig c;
  ConfigSchema schema("tributary-sim");
  BindSimConfig(schema, &c);
  Result<Config> file = Config::LoadFile(
      std::string(std::getenv("TRIBUTARY_SOURCE_DIR") ? std::getenv("TRIBUTARY_SOURCE_DIR") : ".") +
      "/examples/configs/sim.toml");
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(schema.Load(*file).ok());
  c.run.eval_every = 25;  // the same training; fewer evaluations
  Result<SimResult> plain = testing::RunSimulation(c);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  c.run.round.secagg.enabled = true;
  Result<SimResult> secure = testing::RunSimulation(c);
  ASSERT_TRUE(secure.ok()) << secure.status().ToString();
  ASSERT_EQ(plain->rounds.size(), 100u);
  ASSERT_EQ(secure->rounds.size(), 100u);
  ASSERT_TRUE(plain->rounds.back().evaluated && secure->rounds.back().evaluated);
  const double a = plain->rounds.back().test_accuracy, b = secure->rounds.back().test_accuracy;
  std::printf("final test accuracy: plaintext %.4f, secure aggregation %.4f\n", a, b);
  EXPECT_GT(a, 0.85);
  EXPECT_NEAR(b, a, 0.003);
}

}  // namespace
}  // namespace tributary
