// SCAFFOLD's client rule (client/task_executor.h) against a hand computation: the correction the
// trainer gets, the control delta sent, the client's own control variate across rounds and across
// a restart (kept in the state dir), and the refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "client/client_state.h"
#include "client/task_executor.h"
#include "tests/client/fake_trainer.h"
#include "tests/client/temp_dir.h"

namespace tributary {
namespace {

using testing::FakeTrainer;
using testing::TempDir;

// The fake trainer moves weight i by lr * (i + 1) from the zero model; it reports 5 steps, so
// (x - y) / (K * lr) = -0.1 (i + 1) / 0.5 = -0.2 (i + 1). The server's c is 0.5 everywhere.
TaskAssignment Task(uint64_t round, float c = 0.5f) {
  TaskAssignment t;
  t.round = round;
  t.model_version = round - 1;
  t.fit.lr = 0.1f;
  t.codec.spec = "dense";
  t.model.layout_fingerprint = FakeTrainer::Layout().fingerprint();
  t.model.values = std::vector<float>(9, 0.0f);
  t.control = std::vector<float>(9, c);
  return t;
}

std::shared_ptr<FakeTrainer> Trainer() {
  auto t = std::make_shared<FakeTrainer>();
  t->applies = true;
  t->steps = 5;
  return t;
}

// dc_i = (x - y) / (K lr) - c = -0.2 (i + 1) - 0.5 every round (the fake trainer ignores the
// correction); c_i after r rounds = r * dc.
float Delta(size_t i) { return -0.2f * static_cast<float>(i + 1) - 0.5f; }

TEST(ScaffoldClientTest, TheCorrectionAndTheControlDeltaFollowTheRule) {
  auto trainer = Trainer();
  TaskExecutor exec(trainer);
  UpdateSubmission first = *exec.Fit(Task(1));
  // c_i starts at zero: the correction is c.
  ASSERT_EQ(trainer->last_correction.size(), 9u);
  for (float v : trainer->last_correction) EXPECT_FLOAT_EQ(v, 0.5f);
  ASSERT_EQ(first.control_delta.size(), 9u);
  for (size_t i = 0; i < 9; ++i) EXPECT_NEAR(first.control_delta[i], Delta(i), 1e-6) << i;
  // Round 2: the correction is c - c_i = 0.5 - dc = 1 + 0.2 (i + 1).
  UpdateSubmission second = *exec.Fit(Task(2));
  for (size_t i = 0; i < 9; ++i) {
    EXPECT_NEAR(trainer->last_correction[i], 1.0f + 0.2f * static_cast<float>(i + 1), 1e-6) << i;
    EXPECT_NEAR(second.control_delta[i], Delta(i), 1e-6) << i;
  }
  // A server c of 0 in round 3: dc = -0.2 (i + 1), and the correction is -c_i = -2 dc.
  UpdateSubmission third = *exec.Fit(Task(3, 0.0f));
  for (size_t i = 0; i < 9; ++i) {
    EXPECT_NEAR(trainer->last_correction[i], -2.0f * Delta(i), 1e-5) << i;
    EXPECT_NEAR(third.control_delta[i], -0.2f * static_cast<float>(i + 1), 1e-6) << i;
  }
  // A task without a control variate is plain FedAvg: no correction, no control delta.
  TaskAssignment plain = Task(4);
  plain.control = SharedFloats();
  UpdateSubmission u = *exec.Fit(plain);
  EXPECT_TRUE(trainer->last_correction.empty());
  EXPECT_TRUE(u.control_delta.empty());
}

// A client that restarts between rounds reads its c_i back from the state dir and trains round 2
// exactly as one that never stopped; without the file it would start again from zero.
TEST(ScaffoldClientTest, ARestartedClientKeepsItsControlVariate) {
  auto unbroken = Trainer();
  TaskExecutor reference(unbroken);
  ASSERT_TRUE(reference.Fit(Task(1)).ok());
  UpdateSubmission want = *reference.Fit(Task(2));

  for (const bool lose_the_file : {false, true}) {
    TempDir tmp;
    {
      auto state = *ClientState::Open(tmp.path());
      TaskExecutor exec(Trainer(), state.get());
      ASSERT_TRUE(exec.Fit(Task(1)).ok());
    }  // the client stops
    const std::string file = tmp.path() + "/" + ClientState::kControlFileName;
    ASSERT_TRUE(std::filesystem::exists(file));
    if (lose_the_file) std::filesystem::remove(file);
    auto state = *ClientState::Open(tmp.path());
    auto trainer = Trainer();
    TaskExecutor exec(trainer, state.get());
    UpdateSubmission got = *exec.Fit(Task(2));
    ASSERT_EQ(trainer->last_correction.size(), 9u);
    if (lose_the_file) {
      EXPECT_FLOAT_EQ(trainer->last_correction[8], 0.5f);  // from zero again
    } else {
      for (size_t i = 0; i < 9; ++i)
        EXPECT_EQ(trainer->last_correction[i], unbroken->last_correction[i]) << i;
      EXPECT_EQ(std::vector<float>(got.control_delta.begin(), got.control_delta.end()),
                std::vector<float>(want.control_delta.begin(), want.control_delta.end()));
    }
  }
}

TEST(ScaffoldClientTest, AControlVariateOfAnotherModelInTheStateDirIsDropped) {
  TempDir tmp;
  {
    auto state = *ClientState::Open(tmp.path());
    ModelWeights other = *ModelWeights::Create({{"w", {4}}});
    ASSERT_TRUE(state->SaveControl(std::vector<float>(4, 9.0f), other, 0).ok());
    Result<SavedControl> mismatch = state->LoadControl(FakeTrainer::Layout());
    EXPECT_EQ(mismatch.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(mismatch.status().message().find(ClientState::kControlFileName), std::string::npos)
        << mismatch.status().message();
  }
  auto state = *ClientState::Open(tmp.path());
  auto trainer = Trainer();
  TaskExecutor exec(trainer, state.get());
  ASSERT_TRUE(exec.Fit(Task(1)).ok());
  EXPECT_FLOAT_EQ(trainer->last_correction[0], 0.5f);  // zeros, not the other model's 9s
}

// Model versions only grow within a run. A control variate last updated on a newer version than
// a task's belongs to another run (or the coordinator resumed from an older checkpoint): the
// client starts again from zero, in memory and from its state dir.
TEST(ScaffoldClientTest, AControlVariateOfALaterModelVersionIsAnotherRunsAndIsDropped) {
  TempDir tmp;
  auto trainer = Trainer();
  {
    auto state = *ClientState::Open(tmp.path());
    TaskExecutor exec(trainer, state.get());
    ASSERT_TRUE(exec.Fit(Task(5)).ok());  // model version 4
    Result<SavedControl> saved = state->LoadControl(FakeTrainer::Layout());
    ASSERT_TRUE(saved.ok()) << saved.status().ToString();
    EXPECT_EQ(saved->model_version, 4u);
    EXPECT_NEAR(saved->values[0], Delta(0), 1e-6);
    // The same executor given a task of a new run (version 0): zeros again.
    ASSERT_TRUE(exec.Fit(Task(1)).ok());
    EXPECT_FLOAT_EQ(trainer->last_correction[0], 0.5f);
    // A later version of the same run keeps it: round 2 (version 1) follows round 1 (version 0).
    ASSERT_TRUE(exec.Fit(Task(2)).ok());
    EXPECT_NEAR(trainer->last_correction[0], 0.5f - Delta(0), 1e-6);
  }
  // From the state dir (saved after version 1): a task on version 0 drops it, version 1 keeps it.
  for (const uint64_t round : {1u, 2u}) {
    auto state = *ClientState::Open(tmp.path());
    auto t = Trainer();
    TaskExecutor exec(t, state.get());
    TaskAssignment task = Task(round);
    ASSERT_TRUE(exec.Fit(task).ok());
    if (round == 1) {
      EXPECT_FLOAT_EQ(t->last_correction[0], 0.5f);
      // That fit saved its own c_i (version 0) over the old one; put the newer one back.
      ASSERT_TRUE(
          state->SaveControl(std::vector<float>(9, 2 * Delta(0)), FakeTrainer::Layout(), 1).ok());
    } else {
      EXPECT_NEAR(t->last_correction[0], 0.5f - 2 * Delta(0), 1e-5);
    }
  }
}

TEST(ScaffoldClientTest, TasksItCannotDoAreRefusedWithReasons) {
  // A trainer that does not apply the correction.
  auto plain = std::make_shared<FakeTrainer>();
  TaskExecutor no_correction(plain);
  Result<UpdateSubmission> r = no_correction.Fit(Task(1));
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("SCAFFOLD"), std::string::npos) << r.status().message();
  EXPECT_EQ(plain->fit_calls, 0);  // refused before training
  // A control variate of another size, or not finite: PROTOCOL_VIOLATION.
  TaskExecutor exec(Trainer());
  TaskAssignment wrong = Task(1);
  wrong.control = std::vector<float>(3, 0.5f);
  r = exec.Fit(wrong);
  EXPECT_EQ(ProtocolErrorCodeOf(r.status()), ErrorCode::kProtocolViolation);
  EXPECT_NE(r.status().message().find("3 values, the model 9"), std::string::npos)
      << r.status().message();
  TaskAssignment nan = Task(1);
  std::vector<float> values(9, 0.5f);
  values[4] = std::nanf("");
  nan.control = std::move(values);
  EXPECT_EQ(ProtocolErrorCodeOf(exec.Fit(nan).status()), ErrorCode::kProtocolViolation);
  // A trainer that reports no steps: nothing to divide by.
  auto stepless = Trainer();
  stepless->steps = 0;
  TaskExecutor no_steps(stepless);
  r = no_steps.Fit(Task(1));
  EXPECT_NE(r.status().message().find("FitResult::steps"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace tributary
