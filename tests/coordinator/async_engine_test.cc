// The asynchronous engine (FedBuff) driven directly with events and a fake clock.
#include "coordinator/async_engine.h"

#include <gtest/gtest.h>

#include <cmath>

#include "aggregation/fedavg.h"
#include "aggregation/strategy_factory.h"
#include "compression/dense_codec.h"
#include "coordinator/round_engine.h"
#include "coordinator/run_engine_factory.h"
#include "privacy/dp/rdp_accountant.h"

namespace tributary {
namespace {

using namespace std::chrono_literals;

class AsyncEngineTest : public ::testing::Test {
 protected:
  RoundConfig Config(int64_t concurrency, int64_t buffer) {
    RoundConfig c;
    c.mode = "async";
    c.rounds = 5;
    c.clients_per_round = buffer;
    c.async.concurrency = concurrency;
    c.async.buffer_size = buffer;
    c.min_available = 1;
    c.round_timeout = 10s;
    return c;
  }
  void Make(RoundConfig cfg) {
    ModelWeights init = *ModelWeights::Create({{"w", {4}}});
    RunEngine::Hooks hooks;
    hooks.on_round_complete = [this](const RoundSummary& s, const ModelWeights& m) {
      summaries_.push_back(s);
      models_.push_back(m);
    };
    hooks.on_accepted = [this](const std::string& id, uint64_t, uint64_t, uint64_t,
                               const std::optional<UpdateStaleness>& st,
                               const std::string&) { accepted_.emplace_back(id, *st); };
    hooks.on_refused = [this](const std::string& id, uint64_t, const Status& why) {
      refused_.emplace_back(id, why.message());
    };
    Result<std::unique_ptr<AsyncEngine>> e =
        AsyncEngine::Create(cfg, std::make_unique<FedAvg>(), init, 0, 0, hooks);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(*e);
  }
  void Join(const std::string& id, uint64_t n = 100) {
    engine_->OnJoined(id, ClientCapabilities{"cpu", {"dense"}, n, 0, {}}, now_);
  }
  // Tasks sent since the last call, by client (the outbox's errors go to errors_).
  std::map<std::string, TaskAssignment> Tasks() {
    std::map<std::string, TaskAssignment> out;
    for (auto& o : engine_->TakeOutbox()) {
      if (auto* t = std::get_if<TaskAssignment>(&o.message)) {
        EXPECT_FALSE(out.count(o.client_id)) << o.client_id << " got two tasks at once";
        out[o.client_id] = *t;
        held_[o.client_id] = *t;
      }
      if (auto* e = std::get_if<Error>(&o.message)) errors_[o.client_id].push_back(e->message);
    }
    return out;
  }
  UpdateSubmission Update(const TaskAssignment& t, std::vector<float> delta, uint64_t n = 100) {
    UpdateSubmission u;
    u.round = t.round;
    u.task_id = t.task_id;
    u.model_version = t.model_version;
    u.num_examples = n;
    u.update.codec = "dense";
    u.update.layout_fingerprint = t.model.layout_fingerprint;
    u.update.num_floats = delta.size();
    u.update.bytes = *DenseCodec().Encode(delta);
    return u;
  }
  // `id` sends `delta` for the task it holds.
  Status Send(const std::string& id, std::vector<float> delta, uint64_t n = 100) {
    EXPECT_TRUE(held_.count(id)) << id << " holds no task";
    Status s = engine_->OnUpdate(id, Update(held_.at(id), std::move(delta), n), now_);
    held_.erase(id);
    Tasks();  // the replacements
    return s;
  }

  TimePoint now_{};
  std::unique_ptr<AsyncEngine> engine_;
  std::map<std::string, TaskAssignment> held_;
  std::vector<RoundSummary> summaries_;
  std::vector<ModelWeights> models_;
  std::vector<std::pair<std::string, UpdateStaleness>> accepted_;
  std::vector<std::pair<std::string, std::string>> refused_;
  std::map<std::string, std::vector<std::string>> errors_;
};

TEST(StalenessWeightTest, MatchesThePublishedFormulas) {
  StalenessWeight constant = *StalenessWeight::Parse("constant");
  StalenessWeight sqrt = *StalenessWeight::Parse("sqrt");
  StalenessWeight poly = *StalenessWeight::Parse("polynomial:2");
  StalenessWeight hinge = *StalenessWeight::Parse("hinge:0.5:2");
  for (uint64_t t = 0; t <= 6; ++t) {
    const double td = static_cast<double>(t);
    EXPECT_EQ(constant(t), 1.0f);
    EXPECT_EQ(sqrt(t), static_cast<float>(1.0 / std::sqrt(1.0 + td))) << t;
    EXPECT_EQ(poly(t), static_cast<float>(1.0 / ((1.0 + td) * (1.0 + td)))) << t;
    EXPECT_EQ(hinge(t), t <= 2 ? 1.0f : static_cast<float>(1.0 / (0.5 * (td - 2.0) + 1.0))) << t;
  }
  EXPECT_EQ(sqrt(3), 0.5f);
  EXPECT_EQ(hinge(4), 0.5f);
  for (const char* bad : {"", "linear", "polynomial", "polynomial:x", "polynomial:-1",
                          "polynomial:11", "hinge:1", "hinge:0:1", "hinge:1:-1", "sqrt:1"}) {
    Result<StalenessWeight> w = StalenessWeight::Parse(bad);
    ASSERT_FALSE(w.ok()) << bad;
    EXPECT_NE(w.status().message().find("run.staleness_weight"), std::string::npos);
  }
}

TEST_F(AsyncEngineTest, KeepsCClientsTrainingAndReplacesEachFinishedOneAtOnce) {
  Make(Config(3, 2));
  for (int i = 0; i < 6; ++i) Join("c" + std::to_string(i));
  std::map<std::string, TaskAssignment> first = Tasks();
  EXPECT_EQ(first.size(), 3u);
  EXPECT_EQ(engine_->in_flight(), 3u);
  const std::string done = first.begin()->first;
  ASSERT_TRUE(Send(done, {1, 1, 1, 1}).ok());
  EXPECT_EQ(engine_->in_flight(), 3u);  // replaced at once, before any step
  EXPECT_TRUE(summaries_.empty());
  EXPECT_EQ(engine_->dispatches(), 4u);
  // The fourth task was sent on the same model version, with a fit seed of its own.
  std::set<uint64_t> seeds;
  for (const auto& [id, t] : held_) {
    EXPECT_EQ(t.model_version, 0u);
    seeds.insert(t.fit.seed);
  }
  EXPECT_EQ(seeds.size(), 3u);
}

// The hand computation: step = sum(s(t) * n * delta) / sum(n), with s(t) = 1 / (1 + t)
// (polynomial:1), so the discount is not cancelled by the normaliser.
TEST_F(AsyncEngineTest, AStepIsTheStalenessWeightedSumOverThePlainWeights) {
  RoundConfig c = Config(3, 2);
  c.async.staleness_weight = "polynomial:1";
  Make(c);
  Join("a");
  Join("b", 300);
  Join("c");
  Tasks();
  ASSERT_EQ(held_.size(), 3u);
  ASSERT_TRUE(Send("a", {1, 0, 0, 0}, 100).ok());
  ASSERT_TRUE(Send("b", {2, 0, 0, 8}, 300).ok());
  ASSERT_EQ(summaries_.size(), 1u);
  // (100 * 1 + 300 * 2) / 400 = 1.75; (300 * 8) / 400 = 6.
  EXPECT_FLOAT_EQ(models_[0].data()[0], 1.75f);
  EXPECT_FLOAT_EQ(models_[0].data()[3], 6.0f);
  EXPECT_EQ(engine_->model_version(), 1u);
  // c trained on version 0: staleness 1, weight 1/2. a's replacement was sent before the step
  // (version 0), b's after it (version 1).
  ASSERT_TRUE(held_.count("a") && held_.count("b") && held_.count("c"));
  EXPECT_EQ(held_["c"].model_version, 0u);
  EXPECT_EQ(held_["a"].model_version, 0u);
  EXPECT_EQ(held_["b"].model_version, 1u);
  ASSERT_TRUE(Send("c", {4, 0, 0, 0}, 100).ok());
  ASSERT_TRUE(Send("b", {1, 0, 0, 2}, 100).ok());
  ASSERT_EQ(summaries_.size(), 2u);
  // 1.75 + (100 * 0.5 * 4 + 100 * 1 * 1) / 200 = 3.25; 6 + (100 * 2) / 200 = 7.
  EXPECT_FLOAT_EQ(models_[1].data()[0], 3.25f);
  EXPECT_FLOAT_EQ(models_[1].data()[3], 7.0f);
  ASSERT_EQ(accepted_.size(), 4u);
  EXPECT_EQ(accepted_[2].first, "c");
  EXPECT_EQ(accepted_[2].second.trained_on, 0u);
  EXPECT_EQ(accepted_[2].second.staleness, 1u);
  EXPECT_EQ(accepted_[2].second.weight, 0.5f);
  ASSERT_TRUE(summaries_[1].staleness.has_value());
  EXPECT_DOUBLE_EQ(summaries_[1].staleness->mean, 0.5);
  EXPECT_EQ(summaries_[1].staleness->max, 1u);
  EXPECT_EQ(summaries_[1].staleness->histogram[0], 1u);
  EXPECT_EQ(summaries_[1].staleness->histogram[1], 1u);
  EXPECT_EQ(summaries_[1].staleness->in_flight, 2);  // b's slot is refilled after the step
  EXPECT_EQ(summaries_[1].num_examples, 200u);
}

TEST_F(AsyncEngineTest, RefusesAnUpdateMoreThanMaxStalenessBehindWithoutCoolingItsSender) {
  RoundConfig c = Config(2, 1);
  c.async.max_staleness = 1;
  Make(c);
  for (const char* id : {"a", "b"}) Join(id);
  Tasks();
  // Only a is idle each time, so it takes the freed slot: two steps while b trains on version 0.
  ASSERT_TRUE(Send("a", {1, 1, 1, 1}).ok());  // step 1: version 1
  ASSERT_EQ(held_["a"].model_version, 1u);
  ASSERT_TRUE(Send("a", {1, 1, 1, 1}).ok());  // step 2: version 2
  ASSERT_TRUE(held_.count("b"));
  ASSERT_EQ(held_["b"].model_version, 0u);
  Status s = Send("b", {1, 1, 1, 1});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("stale: trained on model version 0, 2 versions behind the current 2, "
                             "more than run.max_staleness = 1"),
            std::string::npos)
      << s.message();
  ASSERT_FALSE(errors_["b"].empty());
  EXPECT_NE(errors_["b"].back().find("stale"), std::string::npos);
  EXPECT_EQ(engine_->registry().CoolingUntil("b"), 0u);  // too slow, not hostile
  EXPECT_EQ(engine_->model_version(), 2u);               // nothing of it was folded
  EXPECT_EQ(engine_->in_flight(), 2u);                   // b's slot went to a new task
}

TEST_F(AsyncEngineTest, EachTaskHasItsOwnDeadlineAndASlowClientNeverStallsTheRun) {
  Make(Config(2, 1));
  for (const char* id : {"fast", "slow"}) Join(id);
  Tasks();
  ASSERT_EQ(held_.size(), 2u);
  // "fast" answers every second and takes the freed slot each time; "slow" never answers.
  for (int i = 0; i < 3; ++i) {
    now_ += 1s;
    ASSERT_TRUE(held_.count("fast"));
    ASSERT_TRUE(Send("fast", {1, 0, 0, 0}).ok());
  }
  EXPECT_EQ(engine_->rounds_done(), 3u);                 // steps went on without the slow client
  EXPECT_EQ(engine_->next_wakeup(), TimePoint{} + 10s);  // slow's task, sent at 0
  now_ = TimePoint{} + 10s;
  engine_->OnTick(now_);
  Tasks();
  // The slow client's task expired; fast's (sent at 3 s) did not.
  // A miss in step 4: it sits out the rest of step 4 and step 5.
  EXPECT_EQ(engine_->registry().CoolingUntil("slow"), 6u);
  ASSERT_TRUE(held_.count("fast"));
  EXPECT_EQ(engine_->next_wakeup(), TimePoint{} + 13s);
  // Its update after the deadline is refused as late.
  Status late = engine_->OnUpdate("slow", Update(held_["slow"], {9, 9, 9, 9}), now_);
  EXPECT_NE(late.message().find("late"), std::string::npos) << late.message();
}

// A late update that arrives before the tick expired its task (a timer runs late) cools its
// sender down exactly as the tick would have: the same miss, the same step.
TEST_F(AsyncEngineTest, ALateUpdateBeforeTheTickCoolsItsSenderAsTheTickWould) {
  Make(Config(2, 1));
  for (const char* id : {"fast", "slow"}) Join(id);
  Tasks();
  ASSERT_EQ(held_.size(), 2u);
  now_ = TimePoint{} + 11s;  // past both deadlines (10 s); no tick yet
  Status late = engine_->OnUpdate("slow", Update(held_["slow"], {9, 9, 9, 9}), now_);
  EXPECT_NE(late.message().find("late: its task's deadline passed"), std::string::npos)
      << late.message();
  const uint64_t cooled_by_update = engine_->registry().CoolingUntil("slow");
  engine_->OnTick(now_);  // expires fast's task the usual way
  EXPECT_GT(cooled_by_update, 0u);
  EXPECT_EQ(cooled_by_update, engine_->registry().CoolingUntil("fast"));
  EXPECT_EQ(engine_->rounds_done(), 0u);
}

TEST_F(AsyncEngineTest, AnUpdateForAnotherTaskIsRefusedAndTheTaskStays) {
  Make(Config(1, 1));
  Join("a");
  Tasks();
  TaskAssignment wrong = held_["a"];
  wrong.model_version = 7;
  Status s = engine_->OnUpdate("a", Update(wrong, {1, 1, 1, 1}), now_);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("the client's task is round 1, task 1 on model version 0"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(engine_->in_flight(), 1u);
  EXPECT_TRUE(Send("a", {1, 1, 1, 1}).ok());
  Status none = engine_->OnUpdate("b", Update(wrong, {1, 1, 1, 1}), now_);
  EXPECT_NE(none.message().find("holds no task"), std::string::npos);
}

// A client whose task expired and that was dispatched again in the same step (same round tag, same
// model version) then answers the expired task: the answer is refused as late, without a second
// miss, and its new task stays open for the answer that follows. Before tasks carried an id, the
// old answer was taken for the new task's (trained with the old task's seed) and the new task's
// answer refused as one for a task it did not hold, cooling an honest client down.
TEST_F(AsyncEngineTest, AnAnswerToAnExpiredTaskIsLateAfterTheClientWasDispatchedAgain) {
  Make(Config(1, 1));
  Join("a");
  Tasks();
  const TaskAssignment first = held_["a"];
  EXPECT_EQ(first.task_id, 1u);
  now_ += 10s;
  engine_->OnTick(now_);  // expired; the only client takes the slot again, cooling or not
  Tasks();
  ASSERT_TRUE(held_.count("a"));
  const TaskAssignment second = held_["a"];
  EXPECT_EQ(second.task_id, 2u);
  EXPECT_EQ(second.round, first.round);
  EXPECT_EQ(second.model_version, first.model_version);
  EXPECT_NE(second.fit.seed, first.fit.seed);
  const uint64_t cooling = engine_->registry().CoolingUntil("a");
  now_ += 1s;
  Status late = engine_->OnUpdate("a", Update(first, {9, 9, 9, 9}), now_);
  EXPECT_FALSE(late.ok());
  EXPECT_NE(late.message().find("late: the update answers an earlier task (1); the client's task "
                                "is 2"),
            std::string::npos)
      << late.message();
  EXPECT_EQ(engine_->registry().CoolingUntil("a"), cooling);  // no second miss
  EXPECT_EQ(engine_->in_flight(), 1u);
  EXPECT_EQ(engine_->rounds_done(), 0u);
  ASSERT_TRUE(Send("a", {2, 2, 2, 2}).ok());
  ASSERT_EQ(models_.size(), 1u);
  EXPECT_FLOAT_EQ(models_[0].data()[0], 2.0f);  // the new task's update, not the expired one's
}

TEST_F(AsyncEngineTest, FinishesAfterItsStepsAndRefusesWhatComesLater) {
  RoundConfig c = Config(2, 1);
  c.rounds = 2;
  Make(c);
  for (const char* id : {"a", "b"}) Join(id);
  Tasks();
  while (!engine_->finished()) {
    ASSERT_FALSE(held_.empty());
    ASSERT_TRUE(Send(held_.begin()->first, {1, 1, 1, 1}).ok());
  }
  EXPECT_EQ(engine_->rounds_done(), 2u);
  EXPECT_FLOAT_EQ(engine_->model().data()[0], 2.0f);
  ASSERT_FALSE(held_.empty());  // a task still in flight at the end
  Status late = Send(held_.begin()->first, {1, 1, 1, 1});
  EXPECT_NE(late.message().find("last step"), std::string::npos);
  EXPECT_FLOAT_EQ(engine_->model().data()[0], 2.0f);
}

TEST_F(AsyncEngineTest, EndsTheRunWhenNoTaskDeliversForMaxRoundAttemptsTimesC) {
  RoundConfig c = Config(2, 1);
  c.max_round_attempts = 2;
  c.cooldown_max_rounds = 0;
  Make(c);
  for (const char* id : {"a", "b"}) Join(id);
  Tasks();
  for (int i = 1; i <= 2 && !engine_->finished(); ++i) {
    now_ = TimePoint{} + 10s * i;
    engine_->OnTick(now_);
    Tasks();
  }
  ASSERT_TRUE(engine_->finished());
  EXPECT_NE(engine_->failure().message().find("the last 4 tasks ended without an accepted update"),
            std::string::npos)
      << engine_->failure().ToString();
}

// A client whose trainer fails says so (TaskFailed): its slot goes to another idle client at once
// (not at the task's deadline), it cools down, and the failure counts as a missed task, so a fleet
// whose every trainer fails ends the run with the reason instead of dispatching for ever. A
// TaskFailed for a task the client does not hold changes nothing.
TEST_F(AsyncEngineTest, AFailedTaskFreesItsSlotAtOnce) {
  Make(Config(2, 2));
  for (const char* id : {"a", "b", "c"}) Join(id);
  std::map<std::string, TaskAssignment> first = Tasks();
  ASSERT_EQ(first.size(), 2u);
  const std::string failing = first.begin()->first;
  const TaskAssignment t = first.begin()->second;
  Status s = engine_->OnTaskFailed(
      failing, TaskFailed{t.round, t.task_id + 5, TaskFailed::kFit, 13, "x"}, now_);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("it holds task " + std::to_string(t.task_id)), std::string::npos) << s;
  EXPECT_TRUE(Tasks().empty());
  now_ += 1s;
  ASSERT_TRUE(engine_
                  ->OnTaskFailed(failing,
                                 TaskFailed{t.round, t.task_id, TaskFailed::kFit, 13,
                                            "trainer.fit failed: out of memory"},
                                 now_)
                  .ok());
  held_.erase(failing);
  std::map<std::string, TaskAssignment> next = Tasks();
  ASSERT_EQ(next.size(), 1u);               // the idle client got the slot at 1 s
  EXPECT_NE(next.begin()->first, failing);  // the failing one cools down
  EXPECT_EQ(engine_->in_flight(), 2u);
  EXPECT_EQ(engine_->dispatches(), 3u);
  EXPECT_GT(engine_->registry().CoolingUntil(failing), 1u);
  EXPECT_FALSE(engine_
                   ->OnTaskFailed(
                       failing, TaskFailed{t.round, t.task_id, TaskFailed::kFit, 13, "again"}, now_)
                   .ok());
  // The two others deliver: the step's summary counts the failure as dropped, not refused.
  for (const auto& [id, task] : held_)
    ASSERT_TRUE(engine_->OnUpdate(id, Update(task, {2, 2, 2, 2}), now_).ok());
  ASSERT_EQ(summaries_.size(), 1u);
  EXPECT_EQ(summaries_[0].accepted, 2);
  EXPECT_EQ(summaries_[0].dropped, 1);
  EXPECT_EQ(summaries_[0].refused, 0);
}

TEST_F(AsyncEngineTest, TasksThatAllFailEndTheRunNamingTheMissedTasks) {
  RoundConfig c = Config(2, 1);
  c.max_round_attempts = 2;
  c.cooldown_max_rounds = 0;
  Make(c);
  for (const char* id : {"a", "b"}) Join(id);
  for (int i = 0; i < 8 && !engine_->finished(); ++i) {
    for (const auto& [id, t] : Tasks())
      ASSERT_TRUE(engine_
                      ->OnTaskFailed(
                          id, TaskFailed{t.round, t.task_id, TaskFailed::kFit, 13, "no data"}, now_)
                      .ok());
  }
  ASSERT_TRUE(engine_->finished());
  EXPECT_EQ(now_, TimePoint{});  // no deadline had to pass
  EXPECT_NE(engine_->failure().message().find("the last 4 tasks ended without an accepted update"),
            std::string::npos)
      << engine_->failure().ToString();
}

// Differential privacy per step: each update clipped, the step's sum noised, every step charged at
// sampling rate 1 (no amplification), one update per client per step, the budget enforced.
TEST_F(AsyncEngineTest, DifferentialPrivacyChargesEveryStepAtRateOneAndOnceAClient) {
  RoundConfig c = Config(2, 2);
  c.rounds = 10;
  c.dp.enabled = true;
  c.dp.noise_multiplier = 2.0;
  c.dp.clip_norm = 1.0;
  c.dp.delta = 1e-5;
  c.dp.noise_seed = 5;  // reproducible noise, for the test
  // The budget: between two and three steps' epsilon.
  RdpAccountant two, three;
  two.Compose(DpSampling::kFixedSize, 1.0, 1.0, 2);  // z / 2 under replace-one adjacency
  three.Compose(DpSampling::kFixedSize, 1.0, 1.0, 3);
  c.dp.target_epsilon = (two.Spent(1e-5).epsilon + three.Spent(1e-5).epsilon) / 2;
  Make(c);
  for (const char* id : {"a", "b", "c"}) Join(id);
  Tasks();
  ASSERT_EQ(held_.size(), 2u);
  const std::string first = held_.begin()->first;
  ASSERT_TRUE(Send(first, {30, 0, 0, 40}).ok());  // norm 50: clipped to 1
  // The first client contributed to this step: its slot goes to the third client, not to it.
  EXPECT_FALSE(held_.count(first));
  EXPECT_EQ(held_.size(), 2u);
  while (!engine_->finished()) {
    ASSERT_FALSE(held_.empty());
    ASSERT_TRUE(Send(held_.begin()->first, {0, 3, 4, 0}).ok());
  }
  ASSERT_TRUE(engine_->budget_spent());
  EXPECT_NE(engine_->stop_reason().find("stops before step 3"), std::string::npos)
      << engine_->stop_reason();
  ASSERT_EQ(summaries_.size(), 2u);
  ASSERT_TRUE(summaries_[0].dp.has_value());
  EXPECT_EQ(summaries_[0].dp->sampling_rate, 1.0);
  EXPECT_EQ(summaries_[0].dp->clipped, 2);
  EXPECT_DOUBLE_EQ(summaries_[0].dp->noise_stddev, 2.0);
  EXPECT_EQ(engine_->dp()->rounds_charged(), 2);
  EXPECT_DOUBLE_EQ(engine_->dp()->Spent().epsilon, two.Spent(1e-5).epsilon);
  // A task still in flight when the budget stopped the run: its update has no step to join. It is
  // refused, naming the stop, and charges nothing (it used to go into the applied step's sum and
  // release a third, over-budget step, then fail the run).
  const std::vector<float> model_before(engine_->model().data().begin(),
                                        engine_->model().data().end());
  ASSERT_EQ(held_.size(), 1u);
  Status late = Send(held_.begin()->first, {0, 3, 4, 0});
  EXPECT_EQ(late.code(), StatusCode::kFailedPrecondition) << late;
  EXPECT_NE(late.message().find("late: the run has stopped (differential privacy"),
            std::string::npos)
      << late.message();
  EXPECT_EQ(engine_->dp()->rounds_charged(), 2);
  EXPECT_TRUE(engine_->failure().ok()) << engine_->failure();
  EXPECT_EQ(summaries_.size(), 2u);
  EXPECT_EQ(std::vector<float>(engine_->model().data().begin(), engine_->model().data().end()),
            model_before);
}

TEST(AsyncEngineCreateTest, RefusesWhatCannotStreamOrHasNoSoundAccountingYet) {
  RoundConfig c;
  c.mode = "async";
  ModelWeights init = *ModelWeights::Create({{"w", {4}}});
  Result<std::unique_ptr<Strategy>> median = MakeStrategy("median");
  ASSERT_TRUE(median.ok());
  Result<std::unique_ptr<RunEngine>> e = MakeRunEngine(c, std::move(*median), init, 0, 0, 0, {});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("cannot be used with run.mode = 'async'"), std::string::npos)
      << e.status().ToString();
  RoundConfig s = c;
  s.secagg.enabled = true;
  s.async.concurrency = 5;  // below a cohort of run.clients_per_round = 10
  EXPECT_NE(s.Validate().message().find("'run.concurrency' = 5 is below run.clients_per_round"),
            std::string::npos)
      << s.Validate().ToString();
  RoundConfig d = c;
  d.dp.enabled = true;
  d.dp.placement = "client";
  EXPECT_NE(d.Validate().message().find("'dp.placement' = 'client' cannot be used with run.mode"),
            std::string::npos)
      << d.Validate().ToString();
  d.dp.placement = "server";
  d.dp.sampling = "poisson";
  EXPECT_NE(d.Validate().message().find("'dp.sampling' = 'poisson' cannot be used with run.mode"),
            std::string::npos)
      << d.Validate().ToString();
  RoundConfig m = c;
  m.mode = "fast";
  EXPECT_NE(m.Validate().message().find("'run.mode' = 'fast' must be 'sync' or 'async'"),
            std::string::npos);
  RoundConfig w = c;
  w.async.staleness_weight = "cubic";
  EXPECT_NE(w.Validate().message().find("run.staleness_weight"), std::string::npos);
  // A synchronous config builds the round engine.
  RoundConfig sync;
  Result<std::unique_ptr<RunEngine>> r =
      MakeRunEngine(sync, std::make_unique<FedAvg>(), init, 0, 0, 0, {});
  ASSERT_TRUE(r.ok());
  EXPECT_NE(dynamic_cast<RoundEngine*>(r->get()), nullptr);
}

}  // namespace
}  // namespace tributary
