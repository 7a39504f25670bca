#include "coordinator/checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/file_util.h"

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
  ASSERT_TRUE(SaveCheckpoint(dir, st).ok());
  auto back = LoadCheckpoint(dir);
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
  ASSERT_TRUE(SaveCheckpoint(dir, st).ok());
  EXPECT_EQ(LoadCheckpoint(dir)->rounds_done, 4u);
  size_t files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1u);
  std::filesystem::remove_all(dir);
}

TEST(CheckpointTest, MissingAndDamagedCheckpointsAreClearErrors) {
  const std::string dir = TempDir("bad");
  EXPECT_EQ(LoadCheckpoint(dir).status().code(), StatusCode::kNotFound);
  CheckpointState st;
  st.model = *ModelWeights::Create({{"w", {100}}});
  ASSERT_TRUE(SaveCheckpoint(dir, st).ok());
  // Truncate the file: the loader must refuse it, naming the file.
  auto bytes = *ReadFileBytes(CheckpointPath(dir), 1 << 20);
  bytes.resize(bytes.size() - 10);
  ASSERT_TRUE(WriteFileAtomic(CheckpointPath(dir), bytes).ok());
  auto r = LoadCheckpoint(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_NE(r.status().message().find("checkpoint.safetensors"), std::string::npos) << r.status();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tributary
