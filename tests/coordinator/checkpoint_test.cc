#include "coordinator/checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/file_util.h"
#include "tests/core/fault_injection_env.h"

namespace tributary {
namespace {

std::string TempDir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() /
           ("trib_ckpt_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  return p.string();
}

TEST(CheckpointTest, RoundTripsModelStrategyStateAndCounters) {
  CheckpointState st;
  st.rounds_done = 3;
  st.model_version = 3;
  st.seed = 42;
  st.strategy = "fedavgm";
  st.model_name = "mlp";
  st.model = *ModelWeights::Create({{"fc1.weight", {3, 2}}, {"fc1.bias", {3}}});
  for (size_t i = 0; i < st.model.size(); ++i) st.model.data()[i] = 0.25f * i;
  st.strategy_state = *ModelWeights::Create({{"momentum", {9}}});
  st.strategy_state.data()[4] = -7.5f;
  const std::string dir = TempDir("rt");
  ASSERT_TRUE(SaveCheckpoint(Env::Default(), dir, st).ok());
  auto back = LoadCheckpoint(Env::Default(), dir);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->rounds_done, 3u);
  EXPECT_EQ(back->seed, 42u);
  EXPECT_EQ(back->strategy, "fedavgm");
  EXPECT_EQ(back->model_name, "mlp");
  EXPECT_EQ(back->model, st.model);
  EXPECT_EQ(back->model.content_hash(), st.model.content_hash());
  EXPECT_EQ(back->strategy_state, st.strategy_state);
  // A newer round replaces it in place, leaving no temporary files behind.
  st.rounds_done = 4;
  ASSERT_TRUE(SaveCheckpoint(Env::Default(), dir, st).ok());
  EXPECT_EQ(LoadCheckpoint(Env::Default(), dir)->rounds_done, 4u);
  size_t files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1u);
  std::filesystem::remove_all(dir);
}

TEST(CheckpointTest, MissingAndDamagedCheckpointsAreClearErrors) {
  const std::string dir = TempDir("bad");
  EXPECT_EQ(LoadCheckpoint(Env::Default(), dir).status().code(), StatusCode::kNotFound);
  CheckpointState st;
  st.model = *ModelWeights::Create({{"w", {100}}});
  ASSERT_TRUE(SaveCheckpoint(Env::Default(), dir, st).ok());
  // Truncate the file: the loader must refuse it, naming the file.
  auto bytes = *ReadFileBytes(CheckpointPath(dir), 1 << 20);
  bytes.resize(bytes.size() - 10);
  ASSERT_TRUE(WriteFileAtomic(CheckpointPath(dir), bytes).ok());
  auto r = LoadCheckpoint(Env::Default(), dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_NE(r.status().message().find("checkpoint.safetensors"), std::string::npos) << r.status();
  std::filesystem::remove_all(dir);
}

CheckpointState StateAfterRound(uint64_t round) {
  CheckpointState st;
  st.rounds_done = round;
  st.model_version = round;
  st.seed = 7;
  st.strategy = "fedavgm";
  st.model_name = "mlp";
  st.model = *ModelWeights::Create({{"w", {64}}, {"b", {8}}});
  for (size_t i = 0; i < st.model.size(); ++i) st.model.data()[i] = float(round) + 0.01f * i;
  st.strategy_state = *ModelWeights::Create({{"m", {72}}});
  st.strategy_state.data()[3] = -float(round);
  return st;
}

void ExpectState(const CheckpointState& got, const CheckpointState& want) {
  EXPECT_EQ(got.rounds_done, want.rounds_done);
  EXPECT_EQ(got.model_version, want.model_version);
  EXPECT_EQ(got.model, want.model);
  EXPECT_EQ(got.strategy_state, want.strategy_state);
}

TEST(CheckpointTest, ACrashAtEveryWritePointLeavesTheLastGoodCheckpoint) {
  int64_t crash_points = 0;
  for (int64_t n = 0;; ++n) {
    testing::FaultInjectionEnv env;
    ASSERT_TRUE(SaveCheckpoint(&env, "runs/x", StateAfterRound(1)).ok());
    env.FailAfter(n);
    const Status saved = SaveCheckpoint(&env, "runs/x", StateAfterRound(2));
    env.Crash();
    Result<CheckpointState> back = LoadCheckpoint(&env, "runs/x");
    ASSERT_TRUE(back.ok()) << "crash after write point " << n << ": " << back.status();
    if (saved.ok()) {
      ExpectState(*back, StateAfterRound(2));
      crash_points = n;
      break;
    }
    ExpectState(*back, StateAfterRound(1));
  }
  EXPECT_GE(crash_points, 6) << "every write point of the save was crashed at";
}

TEST(CheckpointTest, ACrashDuringTheFirstCheckpointLeavesNoneRatherThanADamagedOne) {
  for (int64_t n = 0;; ++n) {
    testing::FaultInjectionEnv env;
    env.FailAfter(n);
    const Status saved = SaveCheckpoint(&env, "runs/x", StateAfterRound(1));
    env.Crash();
    Result<CheckpointState> back = LoadCheckpoint(&env, "runs/x");
    if (saved.ok()) {
      ASSERT_TRUE(back.ok()) << back.status();
      ExpectState(*back, StateAfterRound(1));
      break;
    }
    EXPECT_EQ(back.status().code(), StatusCode::kNotFound)
        << "crash after write point " << n << ": " << back.status();
  }
}

}  // namespace
}  // namespace tributary
