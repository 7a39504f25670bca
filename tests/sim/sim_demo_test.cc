// examples/configs/sim.toml, the demo (100 Fashion-MNIST clients, 10 per round, 100 rounds of
// `mlp`), with secure aggregation: its final test accuracy is within 0.3 points of the same run
// without it. The whole demo, twice, takes about 140 s on 2 cores: that is the long mode
// (TRIBUTARY_LONG=1); by default the test runs the demo's first 40 rounds (about 55 s). Its own
// binary: the sanitizer passes leave it out.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

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
  const char* long_env = std::getenv("TRIBUTARY_LONG");
  const bool long_mode = long_env != nullptr && std::string(long_env) == "1";
  const uint64_t rounds = long_mode ? 100 : 40;
  c.run.round.rounds = static_cast<int64_t>(rounds);
  c.run.eval_every = 20;  // the same training; fewer evaluations
  Result<SimResult> plain = testing::RunSimulation(c);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  c.run.round.secagg.enabled = true;
  Result<SimResult> secure = testing::RunSimulation(c);
  ASSERT_TRUE(secure.ok()) << secure.status().ToString();
  ASSERT_EQ(plain->rounds.size(), rounds);
  ASSERT_EQ(secure->rounds.size(), rounds);
  ASSERT_TRUE(plain->rounds.back().evaluated && secure->rounds.back().evaluated);
  const double a = plain->rounds.back().test_accuracy, b = secure->rounds.back().test_accuracy;
  std::printf("test accuracy after %llu rounds: plaintext %.4f, secure aggregation %.4f\n",
              static_cast<unsigned long long>(rounds), a, b);
  EXPECT_GT(a, long_mode ? 0.85 : 0.84);
  EXPECT_NEAR(b, a, 0.003);
}

}  // namespace
}  // namespace tributary
