// The client's side of a run that federates only the unfrozen tensors (FrozenPart,
// client/task_executor.h): the task's model holds the listed tensors, the frozen rest comes with
// the first task and is kept for the next; the trainer sees the whole model, the update and
// SCAFFOLD's control delta cover the federated tensors alone; and every inconsistency is a
// PROTOCOL_VIOLATION that names it.
#include <gtest/gtest.h>

#include "client/task_executor.h"
#include "compression/codec.h"
#include "compression/update_sink.h"
#include "protocol/wire.h"
#include "tests/client/fake_trainer.h"

namespace tributary {
namespace {

using testing::FakeTrainer;

// FakeTrainer's layout: fc.weight [2, 3] (floats 0-5), then fc.bias [3] (6-8). The bias is
// federated, the weight frozen.
const std::vector<float> kWeight = {0.5f, -1.25f, 2.0f, 0.1f, -0.3f, 0.7f};
const std::vector<float> kBias = {1.5f, -2.0f, 0.25f};

ModelWeights Bias(const std::vector<float>& v) {
  ModelWeights w = *ModelWeights::Create({{"fc.bias", {3}}});
  std::copy(v.begin(), v.end(), w.data().begin());
  return w;
}

uint64_t WeightHash(const std::vector<float>& v) {
  ModelWeights w = *ModelWeights::Create({{"fc.weight", {2, 3}}});
  std::copy(v.begin(), v.end(), w.data().begin());
  return w.content_hash();
}

TaskAssignment Task(bool with_values, std::vector<uint32_t> federated = {1}) {
  TaskAssignment t;
  t.round = 1;
  t.fit.lr = 0.1f;
  t.fit.epochs = 1;
  t.codec.spec = "dense";
  t.model = ModelPayload(Bias(kBias).fingerprint(), std::vector<float>(kBias));
  t.frozen.federated = std::move(federated);
  t.frozen.hash = WeightHash(kWeight);
  if (with_values) t.frozen.values = std::vector<float>(kWeight);
  return t;
}

std::vector<float> DecodeDense(const UpdateSubmission& s) {
  std::vector<float> out(s.update.num_floats, 0.0f);
  BufferSink sink(out);
  (*MakeCodec("dense"))->DecodeInto(s.update.bytes.span(), sink, 1.0f);
  return out;
}

TEST(FrozenPartTest, TheFirstTaskBringsTheFrozenTensorsAndTheUpdateHoldsTheRest) {
  auto trainer = std::make_shared<FakeTrainer>();
  TaskExecutor exec(trainer);
  std::vector<float> seen;
  exec.set_on_global_model([&](const ModelWeights& g, uint64_t, uint64_t) {
    seen.assign(g.data().begin(), g.data().end());
  });
  Result<UpdateSubmission> up = exec.Fit(Task(true));
  ASSERT_TRUE(up.ok()) << up.status().ToString();
  // The trainer's whole model: the frozen weight, then the bias.
  std::vector<float> whole = kWeight;
  whole.insert(whole.end(), kBias.begin(), kBias.end());
  EXPECT_EQ(seen, whole);
  // The fake trainer moves float i by lr (i + 1): the bias (floats 6-8) by 0.7, 0.8, 0.9.
  EXPECT_EQ(up->update.layout_fingerprint, Bias(kBias).fingerprint());
  ASSERT_EQ(up->update.num_floats, 3u);
  const std::vector<float> delta = DecodeDense(*up);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_FLOAT_EQ(delta[i], (kBias[i] + 0.1f * static_cast<float>(i + 7)) - kBias[i]) << i;
  EXPECT_EQ(up->update.bytes.size(), 3 * sizeof(float));

  // The next task names the frozen tensors by hash only: the kept copy is used.
  seen.clear();
  up = exec.Fit(Task(false));
  ASSERT_TRUE(up.ok()) << up.status().ToString();
  EXPECT_EQ(seen, whole);
  EXPECT_EQ(up->update.num_floats, 3u);

  // An evaluation too: the fake trainer's loss is the sum of the whole model's weights.
  EvaluateTask e;
  e.round = 1;
  e.model = ModelPayload(Bias(kBias).fingerprint(), std::vector<float>(kBias));
  e.frozen = Task(false).frozen;
  Result<EvaluateResult> r = exec.Evaluate(e);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  double sum = 0.0;
  for (float v : whole) sum += v;
  EXPECT_NEAR(r->loss, sum, 1e-6);
}

TEST(FrozenPartTest, FrozenTensorsNeverSentOrOfAnotherHashAreRefused) {
  auto trainer = std::make_shared<FakeTrainer>();
  TaskExecutor fresh(trainer);
  Result<UpdateSubmission> up = fresh.Fit(Task(false));
  ASSERT_FALSE(up.ok());
  EXPECT_EQ(ProtocolErrorCodeOf(up.status()), ErrorCode::kProtocolViolation);
  EXPECT_NE(up.status().message().find("this client was never sent"), std::string::npos)
      << up.status().ToString();

  TaskExecutor exec(trainer);
  ASSERT_TRUE(exec.Fit(Task(true)).ok());
  TaskAssignment other = Task(false);
  other.frozen.hash ^= 1;
  up = exec.Fit(other);
  ASSERT_FALSE(up.ok());
  EXPECT_NE(up.status().message().find("this client kept 6 values with hash"), std::string::npos)
      << up.status().ToString();

  // Values that do not hash to what the task names, or of the wrong size.
  TaskAssignment bad = Task(true);
  bad.frozen.hash ^= 1;
  up = exec.Fit(bad);
  ASSERT_FALSE(up.ok());
  EXPECT_NE(up.status().message().find("the frozen tensors sent hash to"), std::string::npos)
      << up.status().ToString();
  bad = Task(true);
  bad.frozen.values = std::vector<float>(5, 0.0f);
  up = exec.Fit(bad);
  ASSERT_FALSE(up.ok());
  EXPECT_NE(
      up.status().message().find("sends 5 values of frozen tensors; this client's model has 6"),
      std::string::npos)
      << up.status().ToString();
  EXPECT_EQ(trainer->fit_calls.load(), 1);  // none of the refused tasks reached the trainer
}

TEST(FrozenPartTest, FederatedIndicesThatDoNotFitTheModelAreRefused) {
  auto trainer = std::make_shared<FakeTrainer>();
  TaskExecutor exec(trainer);
  for (const std::vector<uint32_t>& federated :
       {std::vector<uint32_t>{2}, std::vector<uint32_t>{1, 0}, std::vector<uint32_t>{1, 1}}) {
    Result<UpdateSubmission> up = exec.Fit(Task(true, federated));
    ASSERT_FALSE(up.ok());
    EXPECT_EQ(ProtocolErrorCodeOf(up.status()), ErrorCode::kProtocolViolation);
    EXPECT_NE(up.status().message().find("federated tensors do not fit this client's model of 2 "
                                         "tensors"),
              std::string::npos)
        << up.status().ToString();
  }
  // The model payload must have the federated tensors' layout.
  TaskAssignment t = Task(true, {0});
  Result<UpdateSubmission> up = exec.Fit(t);
  ASSERT_FALSE(up.ok());
  EXPECT_NE(up.status().message().find("layout fingerprint"), std::string::npos)
      << up.status().ToString();
  // Frozen values without a list of federated tensors.
  t = Task(true);
  t.frozen.federated.clear();
  t.model = ModelPayload(FakeTrainer::Layout().fingerprint(), std::vector<float>(9, 0.0f));
  up = exec.Fit(t);
  ASSERT_FALSE(up.ok());
  EXPECT_NE(up.status().message().find("frozen tensors without the list"), std::string::npos)
      << up.status().ToString();
  EXPECT_EQ(trainer->fit_calls.load(), 0);
}

TEST(FrozenPartTest, ScaffoldCorrectsTheWholeModelAndSendsTheFederatedControlDelta) {
  auto trainer = std::make_shared<FakeTrainer>();
  trainer->applies = true;
  trainer->steps = 5;
  TaskExecutor exec(trainer);
  TaskAssignment t = Task(true);
  t.control = std::vector<float>(3, 0.5f);  // the server's c, for the bias alone
  Result<UpdateSubmission> up = exec.Fit(t);
  ASSERT_TRUE(up.ok()) << up.status().ToString();
  // c_i starts at zero: the correction is c on the bias and zero on the frozen weight.
  ASSERT_EQ(trainer->last_correction.size(), 9u);
  for (size_t i = 0; i < 9; ++i)
    EXPECT_FLOAT_EQ(trainer->last_correction[i], i < 6 ? 0.0f : 0.5f) << i;
  // dc_i = (x - y) / (K lr) - c = -0.1 (i + 1) / 0.5 - 0.5 on the bias's floats i = 6, 7, 8.
  ASSERT_EQ(up->control_delta.size(), 3u);
  for (size_t k = 0; k < 3; ++k)
    EXPECT_NEAR(up->control_delta[k], -0.2f * static_cast<float>(k + 7) - 0.5f, 1e-5) << k;
  // A control variate of the whole model's size is not this task's.
  t = Task(false);
  t.control = std::vector<float>(9, 0.5f);
  up = exec.Fit(t);
  ASSERT_FALSE(up.ok());
  EXPECT_NE(up.status().message().find("SCAFFOLD's control variate has 9 values, the model 3"),
            std::string::npos)
      << up.status().ToString();
}

}  // namespace
}  // namespace tributary
