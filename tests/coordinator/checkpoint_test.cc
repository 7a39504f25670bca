#include "coordinator/checkpoint.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "core/file_util.h"
#include "tests/core/fault_injection_env.h"
#include "tests/core/log_capture.h"
#include "tests/core/progress_lines.h"
#include "tests/core/sanitizers.h"

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
  EXPECT_EQ(back->path, CheckpointPath(dir));
  EXPECT_TRUE(back->skipped.empty());
  // A newer round becomes the newest, the older one is kept, and no temporary file stays behind.
  st.rounds_done = st.model_version = 4;
  ASSERT_TRUE(SaveCheckpoint(Env::Default(), dir, st).ok());
  EXPECT_EQ(LoadCheckpoint(Env::Default(), dir)->rounds_done, 4u);
  size_t files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 2u);
  EXPECT_EQ(LoadCheckpointFile(Env::Default(), CheckpointPath(dir, 1))->rounds_done, 3u);
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

CheckpointState StateAfterRound(uint64_t round);

// A wave-1 checkpoint (no checksum) whose counters are not plain digits is refused naming the key:
// "-1" must not load as 2^64 - 1 rounds done.
TEST(CheckpointTest, ACounterThatIsNotPlainDigitsIsRefused) {
  const std::string dir = TempDir("digits");
  ASSERT_TRUE(SaveCheckpoint(Env::Default(), dir, StateAfterRound(12)).ok());
  const std::vector<uint8_t> saved = *ReadFileBytes(CheckpointPath(dir), 1 << 20);
  for (const std::string bad : {"-1", "+1", " 1", "1x"}) {
    std::string text(saved.begin(), saved.end());
    auto swap = [&](const std::string& from, const std::string& to) {
      const size_t at = text.find(from);
      ASSERT_NE(at, std::string::npos) << from;
      ASSERT_EQ(from.size(), to.size());
      text.replace(at, from.size(), to);
    };
    swap("tributary-checkpoint-2", "tributary-checkpoint-1");  // no checksum to update
    swap("\"rounds_done\":\"12\"", "\"rounds_done\":\"" + bad + "\"");
    ASSERT_TRUE(WriteFileAtomic(CheckpointPath(dir), std::string_view(text)).ok());
    Result<CheckpointState> r = LoadCheckpoint(Env::Default(), dir);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << r.status();
    EXPECT_NE(r.status().message().find("'rounds_done' is not a number: '" + bad + "'"),
              std::string::npos)
        << r.status();
  }
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

// The newest `keep` rounds are kept; older ones go.
TEST(CheckpointTest, KeepsTheNewestRoundsAndDropsOlderOnes) {
  testing::FaultInjectionEnv env;
  for (uint64_t round = 1; round <= 5; ++round)
    ASSERT_TRUE(SaveCheckpoint(&env, "runs/x", StateAfterRound(round), 3).ok());
  for (int g = 0; g < 3; ++g) {
    Result<CheckpointState> st = LoadCheckpointFile(&env, CheckpointPath("runs/x", g));
    ASSERT_TRUE(st.ok()) << st.status();
    ExpectState(*st, StateAfterRound(5 - static_cast<uint64_t>(g)));
  }
  EXPECT_FALSE(env.FileExists(CheckpointPath("runs/x", 3)));
}

// Finding 1 of the hostile test: a changed byte anywhere (weights, or metadata such as
// rounds_done 3 -> 5) is caught by the checksum, and resuming falls back to the newest good
// checkpoint, saying which file it skipped and why.
TEST(CheckpointTest, AnyChangedByteFailsTheChecksumAndLoadingFallsBackToTheNewestGoodOne) {
  testing::FaultInjectionEnv env;
  ASSERT_TRUE(SaveCheckpoint(&env, "runs/x", StateAfterRound(2)).ok());
  ASSERT_TRUE(SaveCheckpoint(&env, "runs/x", StateAfterRound(3)).ok());
  const std::string newest = CheckpointPath("runs/x");
  const std::vector<uint8_t> good = *env.ReadFile(newest, 1 << 20);
  uint64_t header = 0;
  std::memcpy(&header, good.data(), 8);
  const std::string text(good.begin() + 8, good.begin() + 8 + static_cast<int64_t>(header));
  const size_t rounds_at = text.find("\"rounds_done\":\"3\"");
  ASSERT_NE(rounds_at, std::string::npos) << text;

  struct Edit {
    const char* what;
    size_t offset;
    uint8_t value;
  };
  const Edit edits[] = {
      {"the last byte of the weights", good.size() - 1, static_cast<uint8_t>(good.back() ^ 1)},
      {"a byte in the middle of the data", 8 + header + 37,
       static_cast<uint8_t>(good[8 + header + 37] ^ 0x80)},
      {"rounds_done 3 -> 5", 8 + rounds_at + 15, static_cast<uint8_t>('5')},
  };
  for (const Edit& e : edits) {
    std::vector<uint8_t> bad = good;
    ASSERT_NE(bad[e.offset], e.value) << e.what;
    bad[e.offset] = e.value;
    ASSERT_TRUE(WriteFileAtomic(&env, newest, bad).ok());
    const Result<CheckpointState> direct = LoadCheckpointFile(&env, newest);
    ASSERT_FALSE(direct.ok()) << e.what;
    EXPECT_EQ(direct.status().code(), StatusCode::kCorruption) << e.what;
    EXPECT_NE(direct.status().message().find("runs/x/checkpoint.safetensors: checksum mismatch"),
              std::string::npos)
        << e.what << ": " << direct.status();
    Result<CheckpointState> fallback = LoadCheckpoint(&env, "runs/x");
    ASSERT_TRUE(fallback.ok()) << e.what << ": " << fallback.status();
    ExpectState(*fallback, StateAfterRound(2));
    EXPECT_EQ(fallback->path, CheckpointPath("runs/x", 1));
    ASSERT_EQ(fallback->skipped.size(), 1u);
    EXPECT_NE(fallback->skipped[0].find("checksum mismatch"), std::string::npos);
  }
  // Every kept file damaged: an error that names each.
  std::vector<uint8_t> older = *env.ReadFile(CheckpointPath("runs/x", 1), 1 << 20);
  older.resize(older.size() / 2);
  ASSERT_TRUE(WriteFileAtomic(&env, CheckpointPath("runs/x", 1), older).ok());
  const Status none = LoadCheckpoint(&env, "runs/x").status();
  EXPECT_EQ(none.code(), StatusCode::kCorruption);
  EXPECT_NE(none.message().find("no usable checkpoint in runs/x"), std::string::npos) << none;
  EXPECT_NE(none.message().find("checkpoint.1.safetensors"), std::string::npos) << none;
}

// Finding 2: weights or optimizer state that are not finite are refused when loaded, naming the
// tensor (a NaN model would otherwise make every update non-finite, round after round).
TEST(CheckpointTest, NonFiniteWeightsOrStateAreRefusedNamingTheTensor) {
  testing::FaultInjectionEnv env;
  CheckpointState st = StateAfterRound(1);
  st.model.data()[70] = std::numeric_limits<float>::quiet_NaN();
  ASSERT_TRUE(SaveCheckpoint(&env, "runs/nan", st, 1).ok());
  Status s = LoadCheckpoint(&env, "runs/nan", 1).status();
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("model tensor 'b' holds nan at index 6"), std::string::npos) << s;
  st = StateAfterRound(1);
  st.strategy_state.data()[5] = std::numeric_limits<float>::infinity();
  ASSERT_TRUE(SaveCheckpoint(&env, "runs/inf", st, 1).ok());
  s = LoadCheckpoint(&env, "runs/inf", 1).status();
  EXPECT_NE(s.message().find("strategy state tensor 'm' holds inf at index 5"), std::string::npos)
      << s;
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

// A checkpoint of kCheckpointProgressBytes or more reports its writing (here forced to log on every
// 16 MiB piece); a smaller one never does.
TEST(CheckpointTest, ALargeCheckpointReportsTheProgressOfItsWriting) {
  TRIB_SKIP_UNDER_TSAN_BECAUSE("one thread writing 64 MiB (16 s there)");
  testing::ForceProgressLines every_piece;
  testing::LogCapture log(LogLevel::kInfo);
  testing::FaultInjectionEnv env;
  ASSERT_TRUE(SaveCheckpoint(&env, "runs/x", StateAfterRound(1)).ok());
  EXPECT_EQ(log.lines(), std::vector<std::string>{}) << "a small checkpoint is quiet";

  CheckpointState big = StateAfterRound(2);
  big.model = *ModelWeights::Create({{"w", {static_cast<int64_t>(kCheckpointProgressBytes / 4)}}});
  for (size_t i = 0; i < big.model.size(); i += 4096) big.model.data()[i] = 0.5f;
  big.strategy_state = ModelWeights();
  ASSERT_TRUE(SaveCheckpoint(&env, "runs/x", big).ok());
  const std::vector<std::string> lines = log.lines();
  // 64 MiB of weights and a small header: four full pieces and a short one, then the closing line.
  ASSERT_EQ(lines.size(), 6u);
  const std::string prefix = "info|saving checkpoint " + CheckpointPath("runs/x");
  EXPECT_EQ(lines[0].rfind(prefix + ": 16.0/64.0 MiB (25%), ", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind(prefix + ": 32.0/64.0 MiB (50%), ", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2].rfind(prefix + ": 48.0/64.0 MiB (75%), ", 0), 0u) << lines[2];
  EXPECT_EQ(lines[3].rfind(prefix + ": 64.0/64.0 MiB (100%), ", 0), 0u) << lines[3];
  EXPECT_EQ(lines[4].rfind(prefix + ": 64.0/64.0 MiB (100%), ", 0), 0u) << lines[4];
  EXPECT_EQ(lines[5].rfind(prefix + " done: 64.0 MiB in ", 0), 0u) << lines[5];
  Result<CheckpointState> back = LoadCheckpoint(&env, "runs/x");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->rounds_done, 2u);
  EXPECT_TRUE(back->model == big.model);
}

}  // namespace
}  // namespace tributary
