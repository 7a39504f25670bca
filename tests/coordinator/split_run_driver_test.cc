// RunDriver in a split-learning run (split.mode; docs/split.md), driven directly: the engine
// trains the device part, the driver's SplitServer the server part; tasks carry the cut; the
// checkpoint, the evaluation and the final model are the whole model; a resumed run takes both
// parts back; and the keys refuse what split learning cannot compose with, saying why.
#include <gtest/gtest.h>

#include "compression/dense_codec.h"
#include "coordinator/run_driver.h"
#include "split/split_task_channel.h"
#include "tests/coordinator/run_recorder.h"
#include "tests/core/fault_injection_env.h"
#include "tests/split/loopback_exchange.h"
#include "tests/train/synthetic_images.h"
#include "train/native_trainer.h"
#include "tributary/safetensors.h"

namespace tributary {
namespace {

using testing::FaultInjectionEnv;

struct SplitEvalRecorder final : Evaluator {
  Result<EvalResult> Evaluate(const ModelWeights& m) override {
    sizes.push_back(m.size());
    hashes.push_back(m.content_hash());
    return EvalResult{1.0, 0.5, 10, {}};
  }
  std::vector<size_t> sizes;
  std::vector<uint64_t> hashes;
};

RunConfig SplitRun(const std::string& mode) {
  RunConfig c;
  c.model = "lenet";
  c.round.rounds = 2;
  c.round.clients_per_round = 2;
  c.round.min_available = 2;
  c.round.round_timeout = std::chrono::seconds(10);
  c.round.fit.batch_size = 16;
  c.round.fit.epochs = 1;
  c.round.split.mode = mode;
  c.eval_every = 1;
  c.checkpoint_dir = "runs/s";
  c.final_model = "runs/s/final.safetensors";
  return c;
}

Result<std::unique_ptr<RunDriver>> MakeSplitDriver(const RunConfig& c, Env* env, bool resume,
                                                   std::shared_ptr<Evaluator> evaluator = nullptr) {
  RunDriver::Options o;
  o.model_spec = *ModelSpecByName("lenet");
  o.env = env;
  o.resume = resume;
  o.evaluator = std::move(evaluator);
  return RunDriver::Create(c, std::move(o));
}

// One round: both clients train their device parts against the driver's server part, as the
// service and the clients would, and send their updates.
void PlaySplitRound(RunDriver& d, const SplitModel& split) {
  RunEngine& e = d.engine();
  const TimePoint now{};
  if (e.registry().size() == 0)
    for (const char* id : {"a", "b"})
      e.OnJoined(id, ClientCapabilities{"cpu", {"dense"}, 40, 0, {}}, now);
  std::vector<RunEngine::Outgoing> outbox = e.TakeOutbox();
  d.NoteTasks(outbox);
  for (RunEngine::Outgoing& o : outbox) {
    auto* t = std::get_if<TaskAssignment>(&o.message);
    if (!t) continue;
    EXPECT_EQ(t->split_cut, 3u);
    EXPECT_EQ(t->split_head, split.head_cut);
    EXPECT_EQ(t->split_codec.spec, "dense");
    ASSERT_EQ(t->model.values.size(), split.device_params);
    ModelWeights global = *ModelWeights::Create(*DeviceLayout(split));
    std::copy(t->model.values.begin(), t->model.values.end(), global.data().begin());
    auto data = std::make_shared<Dataset>(testing::SyntheticImages(40, o.client_id == "a" ? 1 : 2));
    auto trainer = split.u_shaped() ? *NativeTrainer::CreateWithHead(split, data, 0)
                                    : *NativeTrainer::Create(split.device, data, nullptr, 0);
    testing::LoopbackSplitExchange ex(*d.split_server(), o.client_id,
                                      *SplitTaskChannel::Create(*t, global.fingerprint()),
                                      /*over_the_wire=*/false);
    Result<FitResult> r = trainer->fit_split(global, t->fit, ex);
    ASSERT_TRUE(r.ok()) << r.status();
    std::vector<float> delta(global.size());
    for (size_t i = 0; i < delta.size(); ++i) delta[i] = r->weights.data()[i] - global.data()[i];
    UpdateSubmission u;
    u.round = t->round;
    u.task_id = t->task_id;
    u.model_version = t->model_version;
    u.num_examples = 40;
    u.update = {"dense", global.fingerprint(), delta.size(), *DenseCodec().Encode(delta)};
    ASSERT_TRUE(e.OnUpdate(o.client_id, u, now).ok());
  }
}

TEST(SplitRunDriverTest, TheWholeModelIsCheckpointedEvaluatedSavedAndResumed) {
  FaultInjectionEnv env;
  auto evaluator = std::make_shared<SplitEvalRecorder>();
  RunConfig c = SplitRun("sflv1");
  c.round.rounds = 1;
  auto d = MakeSplitDriver(c, &env, false, evaluator);
  ASSERT_TRUE(d.ok()) << d.status();
  const ModelSpec lenet = *ModelSpecByName("lenet");
  const SplitModel split = *CutModel(lenet, 3);
  const ModelWeights init = *InitWeights(lenet, 1);
  // The engine holds the device part; model() the whole one, as it starts.
  EXPECT_EQ((*d)->engine().model().size(), split.device_params);
  EXPECT_EQ((*d)->model().content_hash(), init.content_hash());
  (*d)->Start();
  PlaySplitRound(**d, split);
  ASSERT_TRUE((*d)->engine().finished());
  ASSERT_TRUE((*d)->Finish(Status::Ok()).ok());
  const ModelWeights after = (*d)->model();
  EXPECT_EQ(after.size(), init.size());
  // Both parts moved.
  auto parts = *SplitWeights(split, after);
  auto init_parts = *SplitWeights(split, init);
  EXPECT_NE(parts.first.content_hash(), init_parts.first.content_hash());
  EXPECT_NE(parts.second.content_hash(), init_parts.second.content_hash());
  // The evaluator saw the whole model after the round; the checkpoint and the final file hold it.
  ASSERT_EQ(evaluator->sizes.size(), 1u);
  EXPECT_EQ(evaluator->sizes[0], init.size());
  EXPECT_EQ(evaluator->hashes[0], after.content_hash());
  Result<CheckpointState> ck = LoadCheckpoint(&env, "runs/s");
  ASSERT_TRUE(ck.ok()) << ck.status();
  EXPECT_EQ(ck->model.content_hash(), after.content_hash());
  EXPECT_EQ(ParseSafetensors(*env.ReadFile("runs/s/final.safetensors", 1 << 24))->content_hash(),
            after.content_hash());

  // Resumed (for a second round), the driver takes both parts back from the whole model.
  RunConfig more = c;
  more.round.rounds = 2;
  auto resumed = MakeSplitDriver(more, &env, true);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ((*resumed)->model().content_hash(), after.content_hash());
  EXPECT_EQ((*resumed)->split_server()->weights().content_hash(), parts.second.content_hash());
  EXPECT_EQ((*resumed)->engine().model().content_hash(), parts.first.content_hash());
}

TEST(SplitRunDriverTest, BothModesTrainOnEveryClientsBatches) {
  for (const char* mode : {"sflv1", "sflv2"}) {
    FaultInjectionEnv env;
    auto d = MakeSplitDriver(SplitRun(mode), &env, false);
    ASSERT_TRUE(d.ok()) << d.status();
    testing::RunRecorder recorder;
    (*d)->AddObserver(&recorder);
    const SplitModel split = *CutModel(*ModelSpecByName("lenet"), 3);
    (*d)->Start();
    PlaySplitRound(**d, split);
    PlaySplitRound(**d, split);
    EXPECT_TRUE((*d)->engine().finished()) << mode;
    const SplitServerStats st = (*d)->split_server()->stats();
    EXPECT_EQ(st.batches, 2u * 2 * 3) << mode;  // 2 rounds x 2 clients x ceil(40 / 16) batches
    EXPECT_EQ(st.samples, 2u * 2 * 40) << mode;
    // Every round's RoundClosed carries its own share: 6 batches of 80 samples, whose dense
    // activations (and gradients) are 4 bytes a value of the cut, and the server's compute.
    const std::vector<RoundClosed> closed = recorder.All<RoundClosed>();
    ASSERT_EQ(closed.size(), 2u) << mode;
    double seconds = 0.0;
    for (const RoundClosed& c : closed) {
      ASSERT_TRUE(c.summary.split.has_value()) << mode;
      const SplitRoundReport& r = *c.summary.split;
      EXPECT_EQ(r.batches, 6u) << mode;
      EXPECT_EQ(r.samples, 80u) << mode;
      const uint64_t bytes = 80u * static_cast<uint64_t>(split.cut_shape.numel()) * 4;
      EXPECT_EQ(r.bytes_in, bytes) << mode;
      EXPECT_EQ(r.bytes_out, bytes) << mode;
      EXPECT_GT(r.server_seconds, 0.0) << mode;
      seconds += r.server_seconds;
    }
    EXPECT_DOUBLE_EQ(seconds, st.compute_seconds) << mode;
  }
}

// A U-shaped run (lenet cut at 3 and 9) stopped after its first round and resumed from the
// checkpoint ends with the unbroken run's model, bit for bit: the checkpoint holds the whole model
// and the resumed driver cuts it into the devices' front and head and the server's middle again.
TEST(SplitRunDriverTest, AUShapedRunResumedFromItsCheckpointGivesTheUnbrokenModel) {
  const SplitModel split = *CutModel(*ModelSpecByName("lenet"), 3, 9);
  RunConfig c = SplitRun("sflv1");
  c.round.split.head = 9;
  FaultInjectionEnv unbroken_env;
  auto unbroken = MakeSplitDriver(c, &unbroken_env, false);
  ASSERT_TRUE(unbroken.ok()) << unbroken.status();
  EXPECT_EQ((*unbroken)->engine().model().size(), split.device_params);
  (*unbroken)->Start();
  PlaySplitRound(**unbroken, split);
  PlaySplitRound(**unbroken, split);
  ASSERT_TRUE((*unbroken)->engine().finished());
  ASSERT_TRUE((*unbroken)->Finish(Status::Ok()).ok());
  const uint64_t want = (*unbroken)->model().content_hash();

  FaultInjectionEnv env;
  RunConfig first = c;
  first.round.rounds = 1;
  auto d = MakeSplitDriver(first, &env, false);
  ASSERT_TRUE(d.ok()) << d.status();
  (*d)->Start();
  PlaySplitRound(**d, split);
  ASSERT_TRUE((*d)->Finish(Status::Ok()).ok());
  EXPECT_NE((*d)->model().content_hash(), want);
  auto resumed = MakeSplitDriver(c, &env, true);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  (*resumed)->Start();
  PlaySplitRound(**resumed, split);
  ASSERT_TRUE((*resumed)->engine().finished());
  ASSERT_TRUE((*resumed)->Finish(Status::Ok()).ok());
  EXPECT_EQ((*resumed)->model().content_hash(), want);
  EXPECT_EQ((*resumed)->split_server()->stats().batches, 2u * 3);  // its one round: 2 x 3
}

TEST(SplitRunDriverTest, KeysRefuseWhatSplitLearningCannotComposeWith) {
  auto refused = [](RunConfig c, const std::string& why) {
    Status s = c.Validate();
    EXPECT_FALSE(s.ok()) << why;
    EXPECT_NE(s.message().find(why), std::string::npos) << s.message();
  };
  RunConfig c = SplitRun("sflv1");
  EXPECT_TRUE(c.Validate().ok()) << c.Validate();
  RunConfig bad = c;
  bad.round.split.mode = "sflv3";
  refused(bad, "'split.mode' = 'sflv3' must be 'sflv1'");
  bad = c;
  bad.round.split.codec = "topk(0.1)";
  refused(bad, "uses error feedback");
  bad = c;
  bad.round.mode = "async";
  refused(bad, "'split.mode' is for rounds");
  bad = c;
  bad.round.secagg.enabled = true;
  refused(bad, "cannot be used with secagg.enabled");
  bad = c;
  bad.round.dp.enabled = true;
  bad.round.dp.noise_multiplier = 1.0;
  refused(bad, "cannot be used with dp.enabled");
  bad = c;
  bad.round.federated_eval_every = 1;
  refused(bad, "'eval.federated_every' cannot be used with split.mode");
  bad = c;
  bad.round.split.threads = 0;
  refused(bad, "'split.threads' = 0 must be in [1, 256]");
  // Split keys without split.mode change nothing: refused, named (they were accepted silently,
  // whatever their values).
  bad = c;
  bad.round.split.mode = "";
  bad.round.split.cut = 3;
  refused(bad, "key 'split.cut' has no effect without split.mode");
  bad.round.split.cut = 0;
  bad.round.split.codec = "q8";
  refused(bad, "key 'split.codec' has no effect without split.mode");
  bad.round.split.codec = "dense";
  EXPECT_TRUE(bad.Validate().ok()) << bad.Validate();  // every split key at its default: off
  // A model without a cut, and a cut that leaves the device part without parameters.
  FaultInjectionEnv env;
  RunConfig mlp = c;
  mlp.model = "mlp";
  mlp.round.split.cut = 1;
  RunDriver::Options o;
  o.model_spec = *ModelSpecByName("mlp");
  o.env = &env;
  auto d = RunDriver::Create(mlp, std::move(o));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("key 'split.cut'"), std::string::npos) << d.status();
  EXPECT_NE(d.status().message().find("without parameters"), std::string::npos) << d.status();
}

}  // namespace
}  // namespace tributary
