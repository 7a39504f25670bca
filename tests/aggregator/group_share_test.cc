// The aggregation tier's arithmetic, without sockets: aggregators' GroupShares fold their clients'
// updates and the coordinator's RoundEngine merges their GroupResults (OnGroupResult). The model
// is bitwise the one the engine folds from the same updates sent to it directly, for FedAvg and a
// server optimizer; results that do not add up, or that speak for clients without a task, are
// refused whole; refusals at an aggregator count as refusals at the coordinator.
#include "aggregator/group_share.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "aggregation/strategy_factory.h"
#include "compression/codec.h"
#include "coordinator/engine_parts.h"
#include "coordinator/round_engine.h"
#include "core/rng.h"

namespace tributary {
namespace {

using namespace std::chrono_literals;

constexpr int kClients = 9;
constexpr int kGroups = 3;

class GroupShareTest : public ::testing::Test {
 protected:
  static RoundConfig Config(const std::string& codec = "dense") {
    RoundConfig c;
    c.rounds = 2;
    c.clients_per_round = kClients;
    c.min_available = kClients;
    c.min_completed = kClients;
    c.round_timeout = 10s;
    c.codec = codec;
    return c;
  }
  static ModelWeights Init() { return *ModelWeights::Create({{"w", {5}}, {"b", {3}}}); }

  std::unique_ptr<RoundEngine> MakeEngine(const RoundConfig& c, const std::string& strategy) {
    RunEngine::Hooks hooks;
    hooks.on_refused = [this](const std::string& id, uint64_t, const Status& why) {
      refused_[id] = why.message();
    };
    ModelWeights init = Init();
    for (size_t i = 0; i < init.size(); ++i) init.data()[i] = 0.1f * static_cast<float>(i);
    auto e = RoundEngine::Create(c, *MakeStrategy(strategy), init, 0, 0, hooks);
    EXPECT_TRUE(e.ok()) << e.status();
    for (int i = 0; i < kClients; ++i)
      (*e)->OnJoined("c" + std::to_string(i),
                     ClientCapabilities{"cpu", {"dense", "topk", "q8"}, 1000, 0, {}}, now_);
    return std::move(*e);
  }
  static std::map<std::string, TaskAssignment> Tasks(RunEngine& e) {
    std::map<std::string, TaskAssignment> out;
    for (auto& o : e.TakeOutbox())
      if (auto* t = std::get_if<TaskAssignment>(&o.message)) out[o.client_id] = *t;
    return out;
  }
  // Client i's update of round r: a seeded delta under the run's codec, i * 37 + 11 examples.
  static UpdateSubmission Update(const TaskAssignment& t, int i, const std::string& codec) {
    Rng rng = Rng::Stream(99, {static_cast<uint64_t>(i), t.round});
    std::vector<float> delta(Init().size());
    for (float& v : delta) v = static_cast<float>(rng.Uniform() - 0.5);
    UpdateSubmission u;
    u.round = t.round;
    u.task_id = t.task_id;
    u.model_version = t.model_version;
    u.num_examples = static_cast<uint64_t>(i) * 37 + 11;
    u.metrics["train_loss"] = 0.25 * i;
    auto c = MakeCodec(codec);
    u.update.codec = codec;
    u.update.layout_fingerprint = t.model.layout_fingerprint;
    u.update.num_floats = delta.size();
    u.update.bytes = *(*c)->Encode(delta);
    return u;
  }
  // The round's tasks split into kGroups GroupTasks (client i in group i % kGroups), as the
  // coordinator's service sends them.
  static std::vector<GroupTask> Split(const std::map<std::string, TaskAssignment>& tasks) {
    std::vector<GroupTask> groups(kGroups);
    for (const auto& [id, t] : tasks) {
      GroupTask& g = groups[std::stoi(id.substr(1)) % kGroups];
      if (g.members.empty()) {
        g.task = t;
        g.task.fit.seed = 0;
      }
      g.members.push_back({id, t.fit.seed});
    }
    return groups;
  }
  static ClientRecord Record(const std::string& id) {
    ClientRecord r;
    r.id = id;
    r.capabilities = ClientCapabilities{"cpu", {"dense"}, 1000, 0, {}};
    return r;
  }

  // Two rounds directly, and the same two rounds through kGroups aggregators: the models' bits.
  void ExpectSameModel(const std::string& strategy, const std::string& codec) {
    const RoundConfig c = Config(codec);
    auto direct = MakeEngine(c, strategy);
    auto tiered = MakeEngine(c, strategy);
    TierConfig tier{c, strategy, 1.0};
    for (int round = 1; round <= 2; ++round) {
      auto tasks = Tasks(*direct);
      auto tier_tasks = Tasks(*tiered);
      ASSERT_EQ(tasks.size(), static_cast<size_t>(kClients));
      ASSERT_EQ(tier_tasks.size(), tasks.size());
      for (const auto& [id, t] : tasks)
        ASSERT_TRUE(direct->OnUpdate(id, Update(t, std::stoi(id.substr(1)), codec), now_).ok());
      for (GroupTask& g : Split(tier_tasks)) {
        auto share = GroupShare::Start(tier, g, Init(), now_, now_ + 8s);
        ASSERT_TRUE(share.ok()) << share.status();
        // Each member gets the coordinator's task, with its own seed.
        for (const auto& [id, t] : (*share)->Tasks()) EXPECT_EQ(t, tier_tasks.at(id));
        for (const GroupAssignee& m : g.members) {
          const ClientRecord rec = Record(m.client_id);
          EXPECT_FALSE((*share)->Due(now_)) << "due before its last member answered";
          auto no = (*share)->OnUpdate(
              m.client_id,
              Update(tier_tasks.at(m.client_id), std::stoi(m.client_id.substr(1)), codec), &rec,
              now_);
          EXPECT_FALSE(no.has_value()) << no->reason;
        }
        ASSERT_TRUE((*share)->Due(now_));
        auto result = (*share)->TakeResult();
        ASSERT_TRUE(result.ok()) << result.status();
        EXPECT_TRUE((*share)->Done());
        auto partial = DecodePartialSum(result->partial.span(), Init().size());
        ASSERT_TRUE(partial.ok()) << partial.status();
        EXPECT_EQ(partial->count, g.members.size());
        ASSERT_TRUE(tiered->OnGroupResult("agg", *result, *partial, now_).ok());
      }
      ASSERT_EQ(direct->rounds_done(), static_cast<uint64_t>(round));
      ASSERT_EQ(tiered->rounds_done(), static_cast<uint64_t>(round));
      EXPECT_EQ(tiered->model().content_hash(), direct->model().content_hash())
          << strategy << " " << codec << " round " << round;
    }
  }

  // One round of `engine` through kGroups aggregators: `answer` answers each member at its
  // group's share (an update, a refusal, a failure), after which the share's result is due, goes
  // up and must be taken; `check` sees each result first. The round must close.
  using Answer = std::function<void(GroupShare&, const GroupAssignee&, const TaskAssignment&)>;
  void OneRoundThroughGroups(RoundEngine& engine, const RoundConfig& c, const Answer& answer,
                             const std::function<void(const GroupResult&)>& check = {}) {
    auto tasks = Tasks(engine);
    std::vector<GroupTask> groups = Split(tasks);
    TierConfig tier{c, "fedavg", 1.0};
    for (GroupTask& g : groups) {
      auto share = *GroupShare::Start(tier, g, Init(), now_, now_ + 8s);
      for (const GroupAssignee& m : g.members) answer(*share, m, tasks.at(m.client_id));
      ASSERT_TRUE(share->Due(now_)) << "every member has answered";
      GroupResult r = *share->TakeResult();
      EXPECT_TRUE(share->Done());
      if (check) check(r);
      ASSERT_TRUE(engine
                      .OnGroupResult("agg-" + std::to_string(&g - groups.data()), r,
                                     *DecodePartialSum(r.partial.span(), Init().size()), now_)
                      .ok());
    }
    EXPECT_EQ(engine.rounds_done(), 1u);
  }

  TimePoint now_{};
  std::map<std::string, std::string> refused_;
};

TEST_F(GroupShareTest, ThreeGroupsGiveTheOneCoordinatorModelBitwise) {
  ExpectSameModel("fedavg", "dense");
  ExpectSameModel("fedadam", "dense");
  ExpectSameModel("fedavgm(server_lr=0.5,momentum=0.9)", "topk(0.5)+q8");
}

TEST_F(GroupShareTest, AResultThatDoesNotAddUpOrSpeaksForOthersIsRefusedWhole) {
  const RoundConfig c = Config();
  auto engine = MakeEngine(c, "fedavg");
  auto tasks = Tasks(*engine);
  std::vector<GroupTask> groups = Split(tasks);
  auto share = *GroupShare::Start(TierConfig{c, "fedavg", 1.0}, groups[0], Init(), now_, now_ + 8s);
  // An answer to an earlier task of the round (a failed attempt's) is late, and leaves the
  // member's task open.
  {
    const std::string& first = groups[0].members[0].client_id;
    const ClientRecord rec = Record(first);
    UpdateSubmission old = Update(tasks.at(first), std::stoi(first.substr(1)), "dense");
    ASSERT_EQ(old.task_id, 1u);
    old.task_id = 0;
    auto late = share->OnUpdate(first, old, &rec, now_);
    ASSERT_TRUE(late.has_value());
    EXPECT_EQ(late->kind, "late");
    EXPECT_NE(late->reason.find("answers task 0 of round 1, whose current task is 1"),
              std::string::npos)
        << late->reason;
  }
  for (const GroupAssignee& m : groups[0].members) {
    const ClientRecord rec = Record(m.client_id);
    ASSERT_FALSE(
        share
            ->OnUpdate(m.client_id,
                       Update(tasks.at(m.client_id), std::stoi(m.client_id.substr(1)), "dense"),
                       &rec, now_)
            .has_value());
  }
  GroupResult good = *share->TakeResult();
  const PartialSum partial = *DecodePartialSum(good.partial.span(), Init().size());

  GroupResult heavier = good;
  heavier.records[0].num_examples += 1;  // claims more weight than the sum holds
  heavier.records[0].weight += 1;
  Status s = engine->OnGroupResult("agg", heavier, partial, now_);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("partial sum holds 3 updates of total weight"), std::string::npos)
      << s;

  GroupResult stranger = good;
  stranger.records.push_back(good.records[0]);
  stranger.records.back().client_id = "c99";  // holds no task of this round
  stranger.records.back().code = 7;           // even as a refusal
  s = engine->OnGroupResult("agg", stranger, partial, now_);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("client 'c99' holds no task of round 1"), std::string::npos) << s;

  GroupResult stale = good;
  stale.round = 7;
  s = engine->OnGroupResult("agg", stale, partial, now_);
  EXPECT_NE(s.message().find("round 7, which is not open"), std::string::npos) << s;

  GroupResult other_attempt = good;
  EXPECT_EQ(good.task_id, 1u);
  other_attempt.task_id = 2;
  s = engine->OnGroupResult("agg", other_attempt, partial, now_);
  EXPECT_NE(s.message().find("a partial sum for attempt 2 of round 1, but attempt 1 is open"),
            std::string::npos)
      << s;

  // None of that changed anything: the good result is taken, and only once.
  ASSERT_TRUE(engine->OnGroupResult("agg", good, partial, now_).ok());
  s = engine->OnGroupResult("agg", good, partial, now_);
  EXPECT_NE(s.message().find("holds no task of round 1 (it has answered already)"),
            std::string::npos)
      << s;
  EXPECT_TRUE(refused_.empty());
}

TEST_F(GroupShareTest, RefusalsAtAnAggregatorCountAtTheCoordinatorAndTheRoundCloses) {
  RoundConfig c = Config();
  c.min_completed = kClients - 1;
  auto engine = MakeEngine(c, "fedavg");
  OneRoundThroughGroups(*engine, c,
                        [&](GroupShare& share, const GroupAssignee& m, const TaskAssignment& t) {
                          const ClientRecord rec = Record(m.client_id);
                          UpdateSubmission u = Update(t, std::stoi(m.client_id.substr(1)), "dense");
                          if (m.client_id == "c4") u.num_examples = 5000;  // its Hello said 1000
                          auto no = share.OnUpdate(m.client_id, u, &rec, now_);
                          EXPECT_EQ(no.has_value(), m.client_id == "c4");
                          if (m.client_id != "c4") return;
                          EXPECT_EQ(no->kind, "num_examples above Hello");
                          // A second update of the same client is a duplicate at the aggregator.
                          auto dup = share.OnUpdate(m.client_id, u, &rec, now_);
                          ASSERT_TRUE(dup.has_value());
                          EXPECT_EQ(dup->kind, "duplicate");
                        });
  ASSERT_EQ(refused_.count("c4"), 1u);
  EXPECT_NE(refused_["c4"].find("via aggregator 'agg-1'"), std::string::npos) << refused_["c4"];
  // c4 cools down: it sits out the next round.
  EXPECT_GT(engine->registry().CoolingUntil("c4"), 1u);
}

// With over-selection the coordinator closes a round at its quota: a group sends what it has once
// its share of the quota is accepted (a refusal does not count), and the rest with its last answer.
TEST_F(GroupShareTest, WithOverSelectionTheGroupsShareOfTheQuotaGoesUpWithoutWaitingForTheRest) {
  const RoundConfig c = Config();
  auto engine = MakeEngine(c, "fedavg");
  auto tasks = Tasks(*engine);
  GroupTask g = Split(tasks)[0];  // c0, c3, c6
  RoundConfig over = c;
  over.over_selection = 1.5;  // a group of 3 holds ceil(3 / 1.5) = 2 of the quota
  auto share = *GroupShare::Start(TierConfig{over, "fedavg", 1.0}, g, Init(), now_, now_ + 8s);
  const ClientRecord r0 = Record("c0"), r3 = Record("c3"), r6 = Record("c6");
  ASSERT_FALSE(share->OnUpdate("c0", Update(tasks.at("c0"), 0, "dense"), &r0, now_).has_value());
  EXPECT_FALSE(share->Due(now_));
  UpdateSubmission wrong = Update(tasks.at("c3"), 3, "dense");
  wrong.model_version += 1;
  ASSERT_TRUE(share->OnUpdate("c3", wrong, &r3, now_).has_value());
  EXPECT_FALSE(share->Due(now_)) << "a refused update is not part of the quota";
  // c3's duplicate is refused too: one answer per member.
  ASSERT_TRUE(share->OnUpdate("c3", Update(tasks.at("c3"), 3, "dense"), &r3, now_).has_value());
  // A fresh share where the second accepted update reaches the quota.
  share = *GroupShare::Start(TierConfig{over, "fedavg", 1.0}, g, Init(), now_, now_ + 8s);
  ASSERT_FALSE(share->OnUpdate("c0", Update(tasks.at("c0"), 0, "dense"), &r0, now_).has_value());
  ASSERT_FALSE(share->OnUpdate("c6", Update(tasks.at("c6"), 6, "dense"), &r6, now_).has_value());
  ASSERT_TRUE(share->Due(now_)) << "2 of 3 accepted: the group's share of the quota";
  GroupResult first = *share->TakeResult();
  EXPECT_EQ(first.records.size(), 2u);
  EXPECT_FALSE(share->Due(now_));
  ASSERT_FALSE(share->OnUpdate("c3", Update(tasks.at("c3"), 3, "dense"), &r3, now_).has_value());
  ASSERT_TRUE(share->Due(now_)) << "the last member answered";
  EXPECT_EQ(share->TakeResult()->records.size(), 1u);
  EXPECT_TRUE(share->Done());

  // Without over-selection the quota is every member: nothing goes up before the last answer.
  share = *GroupShare::Start(TierConfig{c, "fedavg", 1.0}, g, Init(), now_, now_ + 8s);
  ASSERT_FALSE(share->OnUpdate("c0", Update(tasks.at("c0"), 0, "dense"), &r0, now_).has_value());
  ASSERT_FALSE(share->OnUpdate("c6", Update(tasks.at("c6"), 6, "dense"), &r6, now_).has_value());
  EXPECT_FALSE(share->Due(now_));
}

TEST_F(GroupShareTest, AMemberThatLeavesMakesTheResultDueAndTheFlushTimeSendsWhatCame) {
  const RoundConfig c = Config();
  auto engine = MakeEngine(c, "fedavg");
  auto tasks = Tasks(*engine);
  GroupTask g = Split(tasks)[0];  // c0, c3, c6
  auto share = *GroupShare::Start(TierConfig{c, "fedavg", 1.0}, g, Init(), now_, now_ + 8s);
  const ClientRecord rec = Record("c0");
  ASSERT_FALSE(share->OnUpdate("c0", Update(tasks.at("c0"), 0, "dense"), &rec, now_).has_value());
  EXPECT_FALSE(share->Due(now_));
  share->OnLeft("c3");
  EXPECT_FALSE(share->Due(now_ + 7s));  // c6 may still come
  EXPECT_TRUE(share->Due(now_ + 8s));   // the flush time: what came goes up
  GroupResult r = *share->TakeResult();
  EXPECT_EQ(r.records.size(), 1u);
  EXPECT_FALSE(share->Done());  // c6 has not answered
  // A late update after the deadline is refused as late.
  const ClientRecord rec6 = Record("c6");
  auto late = share->OnUpdate("c6", Update(tasks.at("c6"), 6, "dense"), &rec6, now_ + 11s);
  ASSERT_TRUE(late.has_value());
  EXPECT_EQ(late->kind, "late");
}

// A member whose task fails (TaskFailed) has answered: its record says TASK_FAILED with the
// client's reason, the result is due once the others are in, and the coordinator counts it as a
// dropout that cools down, not as a refusal; the round closes with the other eight.
TEST_F(GroupShareTest, AMemberWhoseTaskFailsHasAnsweredAndTheCoordinatorCountsADropout) {
  RoundConfig c = Config();
  c.min_completed = kClients - 1;
  auto engine = MakeEngine(c, "fedavg");
  const auto failure = [](const TaskAssignment& t, uint64_t task_id, const char* why) {
    return TaskFailed{t.round, task_id, TaskFailed::kFit, 13, why};
  };
  OneRoundThroughGroups(
      *engine, c,
      [&](GroupShare& share, const GroupAssignee& m, const TaskAssignment& t) {
        if (m.client_id != "c4") {
          const ClientRecord rec = Record(m.client_id);
          EXPECT_FALSE(share
                           .OnUpdate(m.client_id,
                                     Update(t, std::stoi(m.client_id.substr(1)), "dense"), &rec,
                                     now_)
                           .has_value());
          return;
        }
        // Another task's failure changes nothing; its own is an answer, once.
        EXPECT_FALSE(share.OnTaskFailed("c4", failure(t, t.task_id + 1, "x")).ok());
        ASSERT_TRUE(
            share.OnTaskFailed("c4", failure(t, t.task_id, "trainer.fit failed: no data")).ok());
        EXPECT_FALSE(share.OnTaskFailed("c4", failure(t, t.task_id, "x")).ok());
      },
      [](const GroupResult& r) {
        for (const GroupRecord& rec : r.records) {
          if (rec.client_id != "c4") continue;
          EXPECT_EQ(rec.code, static_cast<uint32_t>(ErrorCode::kTaskFailed));
          EXPECT_EQ(rec.kind, "task failed");
          EXPECT_EQ(rec.reason, "INTERNAL: trainer.fit failed: no data");
        }
      });
  EXPECT_TRUE(refused_.empty()) << refused_.begin()->second;
  EXPECT_GT(engine->registry().CoolingUntil("c4"), 1u);
}

TEST(WhyNotThroughTierTest, NamesWhatTheTierDoesNotCarry) {
  RoundConfig c;
  EXPECT_EQ(WhyNotThroughTier(**MakeStrategy("fedavg"), c), "");
  EXPECT_EQ(WhyNotThroughTier(**MakeStrategy("fedyogi"), c), "");
  EXPECT_NE(WhyNotThroughTier(**MakeStrategy("krum(f=1)"), c).find("needs each update"),
            std::string::npos);
  EXPECT_NE(WhyNotThroughTier(**MakeStrategy("scaffold"), c).find("control variates"),
            std::string::npos);
  RoundConfig a = c;
  a.mode = "async";
  EXPECT_NE(WhyNotThroughTier(**MakeStrategy("fedavg"), a).find("run.mode"), std::string::npos);
  // Secure aggregation runs per group; differential privacy only with it (the clients' noise).
  RoundConfig s = c;
  s.secagg.enabled = true;
  EXPECT_EQ(WhyNotThroughTier(**MakeStrategy("fedavg"), s), "");
  RoundConfig d = c;
  d.dp.enabled = true;
  EXPECT_NE(WhyNotThroughTier(**MakeStrategy("fedavg"), d).find("dp.enabled without secagg"),
            std::string::npos);
  d.secagg.enabled = true;
  EXPECT_EQ(WhyNotThroughTier(**MakeStrategy("fedavg"), d), "");
}

TEST(TierConfigTest, TheRunsKeysTravelAsToml) {
  RunConfig run;
  run.strategy = "fedadam(server_lr=0.01)";
  run.round.codec = "topk(0.1)+q8";
  run.round.max_weight = 500;
  run.round.fit.lr = 0.125f;
  auto back = ParseTierConfig(TierConfigToml(run));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->strategy, run.strategy);
  EXPECT_EQ(back->round.codec, run.round.codec);
  EXPECT_EQ(back->round.max_weight, 500u);
  EXPECT_EQ(back->round.fit.lr, 0.125f);
  auto bad = ParseTierConfig("run.no_such_key = 1\n");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("no_such_key"), std::string::npos) << bad.status();
}

}  // namespace
}  // namespace tributary
