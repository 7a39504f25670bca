// RunDriver: the run lifecycle around the engine, driven directly. Events arrive in their
// documented order; checkpoints, evaluation and the final model go through the Env and the
// Evaluator; resuming continues exactly and refuses a checkpoint of another model or strategy,
// saying what differs; and a crash at any write point of a checkpoint resumes from the last good
// round.
#include "coordinator/run_driver.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <stdexcept>

#include "compression/dense_codec.h"
#include "coordinator/checkpoint.h"
#include "core/file_util.h"
#include "tests/coordinator/run_recorder.h"
#include "tests/core/fault_injection_env.h"
#include "tests/core/log_capture.h"
#include "tributary/safetensors.h"

namespace tributary {
namespace {

using testing::FaultInjectionEnv;

// "Accuracy" is the model's first weight, so the evaluation is checkable.
struct FirstWeight final : Evaluator {
  Result<EvalResult> Evaluate(const ModelWeights& m) override {
    ++calls;
    EvalResult r;
    r.accuracy = m.data()[0];
    r.loss = 1.0;
    r.num_examples = 10;
    return r;
  }
  int calls = 0;
};

ModelWeights Zeros(int64_t n = 4) { return *ModelWeights::Create({{"w", {n}}}); }

RunConfig Config(const std::string& strategy = "fedavg") {
  RunConfig c;
  c.model = "tiny";
  c.strategy = strategy;
  c.round.rounds = 3;
  c.round.clients_per_round = 2;
  c.round.min_available = 2;
  c.round.round_timeout = std::chrono::seconds(10);
  c.eval_every = 2;
  c.checkpoint_dir = "runs/a";
  c.final_model = "runs/a/final.safetensors";
  return c;
}

Result<std::unique_ptr<RunDriver>> Make(const RunConfig& c, Env* env, bool resume = false,
                                        std::shared_ptr<Evaluator> evaluator = nullptr,
                                        int64_t n = 4) {
  RunDriver::Options o;
  o.initial_model = Zeros(n);
  o.env = env;
  o.resume = resume;
  o.evaluator = std::move(evaluator);
  return RunDriver::Create(c, std::move(o));
}

// Answers every task in the outbox with a dense delta of `value` per weight (the clients join
// first when none has).
void PlayRound(RunDriver& d, float value) {
  RunEngine& e = d.engine();
  const TimePoint now{};
  if (e.registry().size() == 0) {
    for (const char* id : {"a", "b"})
      e.OnJoined(id, ClientCapabilities{"cpu", {"dense"}, 5, 0, {}}, now);
  }
  for (RunEngine::Outgoing& o : e.TakeOutbox()) {
    auto* t = std::get_if<TaskAssignment>(&o.message);
    if (!t) continue;
    UpdateSubmission u;
    u.round = t->round;
    u.task_id = t->task_id;
    u.model_version = t->model_version;
    u.num_examples = 5;
    u.update.codec = "dense";
    u.update.layout_fingerprint = t->model.layout_fingerprint;
    u.update.num_floats = t->model.values.size();
    u.update.bytes = *DenseCodec().Encode(std::vector<float>(t->model.values.size(), value));
    ASSERT_TRUE(e.OnUpdate(o.client_id, u, now).ok());
  }
}

TEST(RunDriverTest, EventsComeInOrderAndEvaluationCheckpointsAndTheFinalModelHappen) {
  FaultInjectionEnv env;
  auto evaluator = std::make_shared<FirstWeight>();
  auto d = Make(Config(), &env, false, evaluator);
  ASSERT_TRUE(d.ok()) << d.status();
  testing::RunRecorder rec;
  (*d)->AddObserver(&rec);
  (*d)->Start();
  for (int r = 1; r <= 3; ++r) PlayRound(**d, 0.5f * r);
  ASSERT_TRUE((*d)->engine().finished());
  ASSERT_TRUE((*d)->Finish(Status::Ok()).ok());
  const std::vector<std::string> round = {"round_opened", "update_accepted", "update_accepted",
                                          "checkpoint_written"};
  std::vector<std::string> want = {"run_started"};
  for (int r = 1; r <= 3; ++r) {
    want.insert(want.end(), round.begin(), round.end());
    if (r == 2) want.push_back("evaluated");  // eval.every = 2
    want.push_back("round_closed");
  }
  want.push_back("run_finished");
  EXPECT_EQ(rec.Names(), want);
  // Round 2's evaluation is in its RoundClosed too; the model moved by 0.5 + 1.0 by then.
  auto closed = rec.All<RoundClosed>();
  ASSERT_EQ(closed.size(), 3u);
  EXPECT_FALSE(closed[0].evaluation.has_value());
  ASSERT_TRUE(closed[1].evaluation.has_value());
  EXPECT_DOUBLE_EQ(closed[1].evaluation->accuracy, 1.5);
  EXPECT_EQ(evaluator->calls, 1);
  EXPECT_EQ(closed[2].summary.accepted, 2);
  // The final model, saved through the Env, is the engine's, and RunFinished says where.
  auto finished = rec.All<RunFinished>();
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_TRUE(finished[0].ok);
  EXPECT_EQ(finished[0].final_model, "runs/a/final.safetensors");
  EXPECT_EQ(finished[0].model_hash, (*d)->engine().model().content_hash());
  SafetensorsMetadata meta;
  Result<ModelWeights> saved =
      ParseSafetensors(*env.ReadFile("runs/a/final.safetensors", 1 << 20), &meta);
  ASSERT_TRUE(saved.ok());
  EXPECT_EQ(saved->content_hash(), (*d)->engine().model().content_hash());
  EXPECT_FLOAT_EQ(saved->data()[0], 3.0f);
  EXPECT_EQ(meta["rounds"], "3");
  // Finish is idempotent.
  EXPECT_TRUE((*d)->Finish(Status::Internal("again")).ok());
  EXPECT_EQ(rec.All<RunFinished>().size(), 1u);
}

// A strategy that does not parse is refused with the key and the reason (the coordinator and
// the simulator aborted on it: the driver used the strategy without checking it was made).
TEST(RunDriverTest, AStrategyThatDoesNotParseIsRefusedNamingTheKey) {
  FaultInjectionEnv env;
  for (const std::string spec : {"fedavgg", "krum(f=x)", "fedavgm(server_lr=)"}) {
    Result<std::unique_ptr<RunDriver>> d = Make(Config(spec), &env);
    ASSERT_FALSE(d.ok()) << spec;
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument) << d.status();
    EXPECT_NE(d.status().message().find("run.strategy"), std::string::npos) << d.status();
  }
  Result<std::unique_ptr<RunDriver>> unknown = Make(Config("fedavgg"), &env);
  EXPECT_NE(unknown.status().message().find("unknown rule 'fedavgg'"), std::string::npos)
      << unknown.status();
}

TEST(RunDriverTest, AStoppedRunSavesNoFinalModelAndAFailedOneSaysWhy) {
  FaultInjectionEnv env;
  auto d = Make(Config(), &env);
  ASSERT_TRUE(d.ok());
  testing::RunRecorder rec;
  (*d)->AddObserver(&rec);
  PlayRound(**d, 1.0f);
  EXPECT_EQ((*d)->Finish(Status::Unavailable("round 2 failed 3 attempts")).code(),
            StatusCode::kUnavailable);
  auto f = rec.All<RunFinished>();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_FALSE(f[0].ok);
  EXPECT_NE(f[0].status.find("round 2 failed 3 attempts"), std::string::npos);
  EXPECT_TRUE(f[0].final_model.empty());
  EXPECT_FALSE(env.FileExists("runs/a/final.safetensors"));
}

// An observer whose OnEvent throws (a database or a dashboard failing on bad input).
struct Throwing final : RunObserver {
  void OnEvent(const RunEvent&) override {
    ++calls;
    throw std::runtime_error("invalid UTF-8 byte");
  }
  int calls = 0;
};

TEST(RunDriverTest, AnObserverThatThrowsIsLoggedAndTheRunAndTheOtherObserversGoOn) {
  FaultInjectionEnv env;
  auto d = Make(Config(), &env);
  ASSERT_TRUE(d.ok());
  Throwing throwing;
  testing::RunRecorder rec;
  (*d)->AddObserver(&throwing);
  (*d)->AddObserver(&rec);
  testing::LogCapture log(LogLevel::kWarn);
  (*d)->Start();
  for (int r = 1; r <= 3; ++r) PlayRound(**d, 1.0f);
  ASSERT_TRUE((*d)->Finish(Status::Ok()).ok());
  EXPECT_EQ(rec.All<RoundClosed>().size(), 3u);
  EXPECT_EQ(static_cast<size_t>(throwing.calls), rec.Names().size());
  ASSERT_EQ(log.lines().size(), rec.Names().size());
  EXPECT_NE(log.lines()[0].find("an observer of the run failed on run_started: invalid UTF-8"),
            std::string::npos)
      << log.lines()[0];
}

TEST(RunDriverTest, ResumeContinuesExactlyAndRefusesAnotherModelOrStrategySayingWhatDiffers) {
  FaultInjectionEnv env;
  RunConfig c = Config("fedavgm(momentum=0.5)");
  ModelWeights after_two;
  ModelWeights momentum;
  {
    auto d = Make(c, &env);
    ASSERT_TRUE(d.ok()) << d.status();
    PlayRound(**d, 1.0f);
    PlayRound(**d, 2.0f);
    after_two = (*d)->engine().model();
    momentum = *(*d)->engine().strategy().SaveState();
  }
  auto r = Make(c, &env, /*resume=*/true);
  ASSERT_TRUE(r.ok()) << r.status();
  testing::RunRecorder rec;
  (*r)->AddObserver(&rec);
  (*r)->Start();
  EXPECT_EQ((*r)->engine().rounds_done(), 2u);
  EXPECT_EQ((*r)->engine().model(), after_two);
  EXPECT_EQ(*(*r)->engine().strategy().SaveState(), momentum);
  auto started = rec.All<RunStarted>();
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].resumed_from, CheckpointPath("runs/a"));
  EXPECT_EQ(started[0].rounds_done, 2u);

  RunConfig other = c;
  other.strategy = "fedavg";
  EXPECT_NE(Make(other, &env, true)
                .status()
                .message()
                .find("written by strategy 'fedavgm(momentum=0.5)', but run.strategy is 'fedavg'"),
            std::string::npos);
  other = c;
  other.model = "mlp";
  EXPECT_NE(Make(other, &env, true)
                .status()
                .message()
                .find("was written for run.model 'tiny', but run.model is 'mlp' (the layouts are "
                      "the same; set run.model = 'tiny' to resume it)"),
            std::string::npos);
  const Status layout = Make(c, &env, true, nullptr, /*n=*/5).status();
  EXPECT_NE(layout.message().find("holds a model of another layout than this run's (1 tensors, 4 "
                                  "parameters, against 1 and 5): tensor 0 is 'w' [4] F32 in the "
                                  "checkpoint and 'w' [5] F32 in this run"),
            std::string::npos)
      << layout;
  // No checkpoint: resuming is an error that names the directory, unless a new run was asked
  // for in that case (--resume-or-start).
  FaultInjectionEnv empty;
  const Status none = Make(c, &empty, true).status();
  EXPECT_EQ(none.code(), StatusCode::kNotFound) << none;
  EXPECT_NE(none.message().find("no checkpoint in runs/a (output.checkpoint_dir)"),
            std::string::npos)
      << none;
  RunDriver::Options or_start;
  or_start.initial_model = Zeros();
  or_start.env = &empty;
  or_start.resume = true;
  or_start.start_if_no_checkpoint = true;
  auto fresh = RunDriver::Create(c, std::move(or_start));
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ((*fresh)->engine().rounds_done(), 0u);
}

// Issue 28: every run has its own run_uid, in RunStarted and in each of its checkpoints; a resumed
// run keeps its checkpoint's, so the run history continues the right record.
// A run of `c` that plays two rounds (two checkpoints); its uid ("" when it could not start).
std::string TwoRoundsOf(const RunConfig& c, Env* env) {
  auto d = Make(c, env);
  EXPECT_TRUE(d.ok()) << d.status();
  if (!d.ok()) return "";
  PlayRound(**d, 1.0f);
  PlayRound(**d, 2.0f);
  return (*d)->run_uid();
}

TEST(RunDriverTest, EachRunHasItsOwnUidAndAResumedRunKeepsItsCheckpoints) {
  FaultInjectionEnv env;
  const RunConfig c = Config();
  const std::string first_uid = TwoRoundsOf(c, &env);
  ASSERT_FALSE(first_uid.empty());
  EXPECT_EQ(first_uid.size(), 32u);
  EXPECT_EQ(first_uid.find_first_not_of("0123456789abcdef"), std::string::npos) << first_uid;
  for (int g = 0; g < 2; ++g) {
    Result<CheckpointState> ck = LoadCheckpointFile(&env, CheckpointPath("runs/a", g));
    ASSERT_TRUE(ck.ok()) << ck.status();
    EXPECT_EQ(ck->run_uid, first_uid) << g;
  }
  // Another run of the same config, not resumed: another uid. (In another directory: a new run
  // in this one would set the first run's checkpoints aside, the test below.)
  RunConfig elsewhere = c;
  elsewhere.checkpoint_dir = "runs/b";
  auto other = Make(elsewhere, &env);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE((*other)->run_uid(), first_uid);
  EXPECT_EQ((*other)->run_uid().size(), 32u);
  other->reset();
  // Resumed: the checkpoint's, in RunStarted and in the checkpoints it writes.
  auto r = Make(c, &env, /*resume=*/true);
  ASSERT_TRUE(r.ok()) << r.status();
  testing::RunRecorder rec;
  (*r)->AddObserver(&rec);
  (*r)->Start();
  EXPECT_EQ((*r)->run_uid(), first_uid);
  ASSERT_EQ(rec.All<RunStarted>().size(), 1u);
  EXPECT_EQ(rec.All<RunStarted>()[0].run_uid, first_uid);
  PlayRound(**r, 3.0f);
  EXPECT_EQ(LoadCheckpointFile(&env, CheckpointPath("runs/a"))->rounds_done, 3u);
  EXPECT_EQ(LoadCheckpointFile(&env, CheckpointPath("runs/a"))->run_uid, first_uid);
  std::printf("run_uid %s: kept across the resume; a second run of the config got another\n",
              first_uid.c_str());
}

// A new run (not --resume) in a directory holding an earlier run's checkpoints moves them to
// previous/. Before, the rotation kept them as the new run's older generations, and a --resume
// whose newest checkpoint was damaged fell back to the other run's model without a word.
TEST(RunDriverTest, ANewRunSetsAnEarlierRunsCheckpointsAsideSoResumeNeverFallsBackToThem) {
  FaultInjectionEnv env;
  const RunConfig c = Config();
  const std::string first_uid = TwoRoundsOf(c, &env);
  ASSERT_FALSE(first_uid.empty());
  ASSERT_TRUE(env.FileExists(CheckpointPath("runs/a", 1)));
  {
    auto d = Make(c, &env);  // a new run of the same config in the same directory
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_FALSE(env.FileExists(CheckpointPath("runs/a", 0)));
    EXPECT_FALSE(env.FileExists(CheckpointPath("runs/a", 1)));
    for (int g = 0; g < 2; ++g) {
      Result<CheckpointState> aside =
          LoadCheckpointFile(&env, CheckpointPath("runs/a/previous", g));
      ASSERT_TRUE(aside.ok()) << aside.status();
      EXPECT_EQ(aside->run_uid, first_uid);
      EXPECT_EQ(aside->rounds_done, 2u - g);
    }
    PlayRound(**d, 5.0f);
  }
  ASSERT_TRUE(WriteFileAtomic(&env, CheckpointPath("runs/a"), std::string_view("damaged")).ok());
  auto r = Make(c, &env, /*resume=*/true);
  ASSERT_FALSE(r.ok()) << "resumed another run's checkpoint";
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << r.status();
  EXPECT_NE(r.status().message().find("no usable checkpoint in runs/a"), std::string::npos)
      << r.status();
}

// With differential privacy the accountant lives in the checkpoints: a private run is not resumed
// from an older checkpoint when a newer one cannot be read (the rounds between were released and
// would be released again, counted once), and checkpoints must be written every round.
TEST(RunDriverTest, APrivateRunDoesNotFallBackPastAnUnreadableCheckpoint) {
  FaultInjectionEnv env;
  RunConfig c = Config();
  c.round.rounds = 10;
  c.keep_checkpoints = 3;
  c.round.dp.enabled = true;
  c.round.dp.noise_multiplier = 2.0;
  c.round.dp.delta = 1e-5;
  c.round.dp.noise_seed = 3;
  {
    auto d = Make(c, &env);
    ASSERT_TRUE(d.ok()) << d.status();
    PlayRound(**d, 0.1f);
    PlayRound(**d, 0.1f);
  }
  ASSERT_TRUE(env.FileExists(CheckpointPath("runs/a", 1)));  // round 1's, to fall back to
  ASSERT_TRUE(WriteFileAtomic(&env, CheckpointPath("runs/a"), std::string_view("damaged")).ok());
  auto refused = Make(c, &env, /*resume=*/true);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_NE(refused.status().message().find("(1 rounds done) cannot be read"), std::string::npos)
      << refused.status();
  // Without differential privacy the same damage falls back to round 1's checkpoint.
  RunConfig plain = c;
  plain.round.dp.enabled = false;
  FaultInjectionEnv env2;
  {
    auto d = Make(plain, &env2);
    ASSERT_TRUE(d.ok()) << d.status();
    PlayRound(**d, 0.1f);
    PlayRound(**d, 0.1f);
  }
  ASSERT_TRUE(WriteFileAtomic(&env2, CheckpointPath("runs/a"), std::string_view("damaged")).ok());
  auto fell_back = Make(plain, &env2, /*resume=*/true);
  ASSERT_TRUE(fell_back.ok()) << fell_back.status();
  EXPECT_EQ((*fell_back)->engine().rounds_done(), 1u);

  c.checkpoint_every = 2;
  const Status every = c.Validate();
  EXPECT_EQ(every.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(every.message().find("'output.checkpoint_every' = 2 must be 1 with differential"),
            std::string::npos)
      << every;
}

TEST(RunDriverTest, APrivateRunResumesItsEpsilonAndItsBudgetStopSavesTheFinalModel) {
  FaultInjectionEnv env;
  RunConfig c = Config();
  c.round.rounds = 10;
  c.round.dp.enabled = true;
  c.round.dp.noise_multiplier = 2.0;
  c.round.dp.delta = 1e-5;
  c.round.dp.noise_seed = 3;
  double after_two = 0;
  {
    auto d = Make(c, &env);
    ASSERT_TRUE(d.ok()) << d.status();
    PlayRound(**d, 0.1f);
    PlayRound(**d, 0.1f);
    after_two = (*d)->engine().dp()->Spent().epsilon;
  }
  // Two clients of two per round: q = 1, the plain Gaussian mechanism, charged z / 2.
  RdpAccountant expect;
  expect.Compose(DpSampling::kFixedSize, 1.0, 1.0, 2);
  EXPECT_DOUBLE_EQ(after_two, expect.Spent(1e-5).epsilon);
  expect.Compose(DpSampling::kFixedSize, 1.0, 1.0, 1);
  const double after_three = expect.Spent(1e-5).epsilon;

  // Resumed: epsilon goes on from the checkpoint, and a budget of three rounds ends the run with
  // its final model saved.
  c.round.dp.target_epsilon = after_three * 1.0001;
  auto r = Make(c, &env, /*resume=*/true);
  ASSERT_TRUE(r.ok()) << r.status();
  testing::RunRecorder rec;
  (*r)->AddObserver(&rec);
  (*r)->Start();
  EXPECT_EQ((*r)->engine().dp()->rounds_charged(), 2);
  EXPECT_DOUBLE_EQ((*r)->engine().dp()->Spent().epsilon, after_two);
  PlayRound(**r, 0.1f);
  PlayRound(**r, 0.1f);  // no round 4 was started
  EXPECT_EQ((*r)->engine().rounds_done(), 3u);
  ASSERT_TRUE((*r)->engine().finished());
  EXPECT_TRUE((*r)->Finish((*r)->engine().failure()).ok());
  auto finished = rec.All<RunFinished>();
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0].final_model, c.final_model);
  EXPECT_NE(finished[0].stopped.find("before round 4"), std::string::npos) << finished[0].stopped;

  // Without its accountant a checkpoint cannot resume a private run, and a private run's
  // checkpoint cannot resume without DP.
  CheckpointState plain = *LoadCheckpoint(&env, "runs/a");
  plain.privacy.clear();
  ASSERT_TRUE(SaveCheckpoint(&env, "runs/a", plain).ok());
  auto refused = Make(c, &env, /*resume=*/true);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("would count epsilon from zero again"),
            std::string::npos)
      << refused.status();
  c.round.dp.enabled = false;
  FaultInjectionEnv env2;
  {
    RunConfig p = Config();
    p.round.dp = c.round.dp;
    p.round.dp.enabled = true;
    p.round.dp.target_epsilon = 0;
    auto d = Make(p, &env2);
    ASSERT_TRUE(d.ok());
    PlayRound(**d, 0.1f);
  }
  auto off = Make(c, &env2, /*resume=*/true);
  ASSERT_FALSE(off.ok());
  EXPECT_NE(off.status().message().find("needs dp.enabled"), std::string::npos) << off.status();
}

TEST(RunDriverTest, ACheckpointWithOptimizerStateOfAnotherSizeIsRefusedWhenLoaded) {
  FaultInjectionEnv env;
  CheckpointState st;
  st.rounds_done = st.model_version = 1;
  st.strategy = "fedavgm";
  st.model_name = "tiny";
  st.model = Zeros();
  st.strategy_state = *ModelWeights::Create({{"m", {3}}});
  ASSERT_TRUE(SaveCheckpoint(&env, "runs/a", st).ok());
  const Status s = Make(Config("fedavgm"), &env, true).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(
      s.message().find("fedavgm: checkpointed state has 3 values per tensor, the model has 4"),
      std::string::npos)
      << s;
}

TEST(RunDriverTest, ACrashAtEveryWritePointOfACheckpointResumesFromTheLastGoodRound) {
  const RunConfig c = Config("fedavgm(momentum=0.5)");
  int64_t write_points = 0;
  for (int64_t n = 0;; ++n) {
    FaultInjectionEnv env;
    ModelWeights round1, round1_state, round2, round2_state;
    testing::RunRecorder rec;
    {
      auto d = Make(c, &env);
      ASSERT_TRUE(d.ok());
      (*d)->AddObserver(&rec);
      PlayRound(**d, 1.0f);
      round1 = (*d)->engine().model();
      round1_state = *(*d)->engine().strategy().SaveState();
      env.FailAfter(n);  // round 2's checkpoint is written until write point n, then the crash
      PlayRound(**d, 2.0f);
      round2 = (*d)->engine().model();
      round2_state = *(*d)->engine().strategy().SaveState();
    }
    env.Crash();
    auto checkpoints = rec.All<CheckpointWritten>();
    ASSERT_EQ(checkpoints.size(), 2u);
    ASSERT_TRUE(checkpoints[0].error.empty());
    const bool round2_written = checkpoints[1].error.empty();
    auto r = Make(c, &env, /*resume=*/true);
    ASSERT_TRUE(r.ok()) << "crash after write point " << n << ": " << r.status();
    if (round2_written) {
      EXPECT_EQ((*r)->engine().rounds_done(), 2u);
      EXPECT_EQ((*r)->engine().model(), round2);
      EXPECT_EQ(*(*r)->engine().strategy().SaveState(), round2_state);
      write_points = n;
      break;
    }
    EXPECT_NE(checkpoints[1].error.find("simulated crash"), std::string::npos);
    EXPECT_EQ((*r)->engine().rounds_done(), 1u) << "crash after write point " << n;
    EXPECT_EQ((*r)->engine().model(), round1) << "crash after write point " << n;
    EXPECT_EQ(*(*r)->engine().strategy().SaveState(), round1_state);
  }
  EXPECT_GE(write_points, 6) << "every write point of the checkpoint was crashed at";
}

// A run of a model none of the built-ins has starts from a safetensors file: any names, shapes
// and order, validated by the bounded reader, and refused with the reason when it is not usable.
TEST(RunDriverTest, ARunStartsFromAnInitialModelFileOfAnyLayout) {
  FaultInjectionEnv env;
  ModelWeights init = *ModelWeights::Create(
      {{"encoder/0.W", {8, 4}}, {"encoder/0.b", {8}}, {"Head W", {3, 8}}, {"head:b", {3}}});
  for (size_t i = 0; i < init.size(); ++i) init.data()[i] = 0.01f * static_cast<float>(i) - 0.2f;
  const std::vector<uint8_t> file = SerializeSafetensors(init, {{"producer", "test"}});
  ASSERT_TRUE(env.CreateDirs("init").ok());
  ASSERT_TRUE(WriteFileAtomic(&env, "init/two_layer.safetensors", file).ok());

  RunConfig c = Config();
  c.model = "";
  c.initial_model = "init/two_layer.safetensors";
  RunDriver::Options o;
  o.env = &env;
  auto d = RunDriver::Create(c, std::move(o));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ((*d)->engine().model(), init);  // names, shapes, order and values
  testing::RunRecorder rec;
  (*d)->AddObserver(&rec);
  (*d)->Start();
  const RunStarted started = rec.All<RunStarted>().at(0);
  EXPECT_EQ(started.model, "");
  EXPECT_EQ(started.initial_model, "init/two_layer.safetensors");
  EXPECT_EQ(started.tensors, 4u);
  EXPECT_EQ(started.parameters, 67u);
  EXPECT_EQ(started.model_hash, init.content_hash());

  auto error_of = [&](const RunConfig& rc) {
    RunDriver::Options opts;
    opts.env = &env;
    auto r = RunDriver::Create(rc, std::move(opts));
    return r.ok() ? Status::Ok() : r.status();
  };
  RunConfig missing = c;
  missing.initial_model = "init/nope.safetensors";
  const Status nf = error_of(missing);
  EXPECT_EQ(nf.code(), StatusCode::kNotFound) << nf;
  EXPECT_NE(nf.message().find("key 'run.initial_model'"), std::string::npos) << nf;
  EXPECT_NE(nf.message().find("init/nope.safetensors"), std::string::npos) << nf;

  // One flipped byte in the header: the bounded reader refuses it, naming the key and the file.
  std::vector<uint8_t> flipped = file;
  flipped[12] ^= 0x20;
  ASSERT_TRUE(WriteFileAtomic(&env, "init/flipped.safetensors", flipped).ok());
  RunConfig corrupt = c;
  corrupt.initial_model = "init/flipped.safetensors";
  const Status bad = error_of(corrupt);
  EXPECT_EQ(bad.code(), StatusCode::kCorruption) << bad;
  EXPECT_NE(bad.message().find("key 'run.initial_model' = 'init/flipped.safetensors'"),
            std::string::npos)
      << bad;

  // With run.model named too, the file must have that model's layout.
  RunConfig mlp = c;
  mlp.model = "mlp";
  const Status mismatch = error_of(mlp);
  EXPECT_EQ(mismatch.code(), StatusCode::kInvalidArgument) << mismatch;
  EXPECT_NE(mismatch.message().find("does not have the layout of run.model 'mlp': tensor 0 is "
                                    "'encoder/0.W' [8, 4] F32 in run.initial_model and "
                                    "'fc1.weight' [200, 784] F32 in run.model 'mlp'"),
            std::string::npos)
      << mismatch;

  // Resuming such a run: the checkpoint's model (same layout) replaces the file's weights.
  ModelWeights later = init;
  for (float& v : later.data()) v += 1.0f;
  ASSERT_TRUE(env.CreateDirs("runs/a").ok());
  CheckpointState saved;
  saved.rounds_done = saved.model_version = 2;
  saved.strategy = "fedavg";
  saved.model = later;
  ASSERT_TRUE(SaveCheckpoint(&env, "runs/a", saved).ok());
  RunDriver::Options resume;
  resume.env = &env;
  resume.resume = true;
  auto resumed = RunDriver::Create(c, std::move(resume));
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ((*resumed)->engine().rounds_done(), 2u);
  EXPECT_EQ((*resumed)->engine().model(), later);

  RunConfig neither = c;
  neither.initial_model = "";
  const Status none = error_of(neither);
  EXPECT_NE(none.message().find("'run.model' and 'run.initial_model' are both empty"),
            std::string::npos)
      << none;
}

}  // namespace
}  // namespace tributary
