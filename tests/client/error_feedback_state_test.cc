// The client keeps its codec's error-feedback residual in its state dir: a restarted client picks
// it up and encodes exactly what a client that never stopped would have.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "client/client_state.h"
#include "client/task_executor.h"
#include "compression/codec.h"
#include "tests/client/fake_trainer.h"
#include "tests/client/temp_dir.h"

namespace tributary {
namespace {

using testing::FakeTrainer;
using testing::TempDir;

// The fake trainer adds lr * (i + 1) to weight i, so each round's delta is 0.1 * (1..9).
TaskAssignment Task(uint64_t round, const std::string& codec) {
  TaskAssignment t;
  t.round = round;
  t.model_version = round - 1;
  t.fit.epochs = 1;
  t.fit.lr = 0.1f;
  t.fit.seed = 5;
  t.codec.spec = codec;
  t.model.layout_fingerprint = FakeTrainer::Layout().fingerprint();
  t.model.values = std::vector<float>(9, 0.0f);
  return t;
}

std::vector<float> Decoded(const UpdateSubmission& u) {
  auto codec = *MakeCodec(u.update.codec);
  EXPECT_TRUE(codec->Validate(u.update.bytes, 9).ok());
  std::vector<float> out(9, 0.0f);
  BufferSink sink(out);
  codec->DecodeInto(u.update.bytes, sink, 1.0f);
  return out;
}

TEST(ErrorFeedbackStateTest, ARestartReloadsTheResidual) {
  TempDir tmp;
  const std::string codec = "topk(k=2)";
  {
    auto state = *ClientState::Open(tmp.path());
    TaskExecutor exec(std::make_shared<FakeTrainer>(), state.get());
    UpdateSubmission u = *exec.Fit(Task(1, codec));
    // Round 1 sends the two largest (indices 7 and 8) and keeps the rest.
    std::vector<float> d = Decoded(u);
    EXPECT_FLOAT_EQ(d[7], 0.8f);
    EXPECT_FLOAT_EQ(d[8], 0.9f);
    EXPECT_EQ(d[6], 0.0f);
    ASSERT_EQ(exec.codec_state().residual.size(), 9u);
    EXPECT_FLOAT_EQ(exec.codec_state().residual[6], 0.7f);
    EXPECT_EQ(exec.codec_state().residual[8], 0.0f);
    EXPECT_TRUE(std::filesystem::exists(tmp.path() + "/" + ClientState::kCodecStateFileName));
  }  // the client stops; a new one opens the same state dir
  auto state = *ClientState::Open(tmp.path());
  TaskExecutor restarted(std::make_shared<FakeTrainer>(), state.get());
  UpdateSubmission u2 = *restarted.Fit(Task(2, codec));
  // delta + residual: 0.2 * (i + 1) for i < 7, 0.8 and 0.9 for 7 and 8: indices 5 and 6 win.
  std::vector<float> d2 = Decoded(u2);
  EXPECT_FLOAT_EQ(d2[5], 1.2f);
  EXPECT_FLOAT_EQ(d2[6], 1.4f);
  EXPECT_EQ(d2[8], 0.0f);
  EXPECT_FLOAT_EQ(restarted.codec_state().residual[8], 0.9f);

  // Byte for byte what a client that never restarted sends, and not what a fresh one sends.
  TaskExecutor continuous(std::make_shared<FakeTrainer>());
  ASSERT_TRUE(continuous.Fit(Task(1, codec)).ok());
  EXPECT_EQ(continuous.Fit(Task(2, codec))->update.bytes, u2.update.bytes);
  TaskExecutor fresh(std::make_shared<FakeTrainer>());
  EXPECT_NE(fresh.Fit(Task(2, codec))->update.bytes, u2.update.bytes);
}

TEST(ErrorFeedbackStateTest, AResidualOfAnotherPipelineIsDropped) {
  TempDir tmp;
  {
    auto state = *ClientState::Open(tmp.path());
    TaskExecutor exec(std::make_shared<FakeTrainer>(), state.get());
    ASSERT_TRUE(exec.Fit(Task(1, "topk(k=2)")).ok());
  }
  auto state = *ClientState::Open(tmp.path());
  TaskExecutor restarted(std::make_shared<FakeTrainer>(), state.get());
  TaskExecutor fresh(std::make_shared<FakeTrainer>());
  EXPECT_EQ(restarted.Fit(Task(2, "topk(k=3)"))->update.bytes,
            fresh.Fit(Task(2, "topk(k=3)"))->update.bytes);
  EXPECT_EQ(restarted.codec_state().spec, "topk(k=3)");
}

TEST(ErrorFeedbackStateTest, AnUnreadableResidualStartsAfresh) {
  TempDir tmp;
  {
    std::ofstream f(tmp.path() + "/" + ClientState::kCodecStateFileName, std::ios::binary);
    f << "not a codec state";
  }
  auto state = *ClientState::Open(tmp.path());
  Result<CodecState> bad = state->LoadCodecState(9);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad magic"), std::string::npos) << bad.status();
  TaskExecutor exec(std::make_shared<FakeTrainer>(), state.get());
  TaskExecutor fresh(std::make_shared<FakeTrainer>());
  EXPECT_EQ(exec.Fit(Task(1, "topk(k=2)"))->update.bytes,
            fresh.Fit(Task(1, "topk(k=2)"))->update.bytes);
  // The good state replaced the bad file.
  EXPECT_EQ(state->LoadCodecState(9)->residual.size(), 9u);
}

TEST(ErrorFeedbackStateTest, CodecsWithoutFeedbackKeepNoState) {
  TempDir tmp;
  auto state = *ClientState::Open(tmp.path());
  TaskExecutor exec(std::make_shared<FakeTrainer>(), state.get());
  ASSERT_TRUE(exec.Fit(Task(1, "q8")).ok());
  EXPECT_TRUE(exec.codec_state().residual.empty());
  EXPECT_FALSE(std::filesystem::exists(tmp.path() + "/" + ClientState::kCodecStateFileName));
}

}  // namespace
}  // namespace tributary
