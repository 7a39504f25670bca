// The distributed simulation (sim/rank_link.h) with ranks as threads of this process: the same
// model, round by round, for 1 process and 2 or 3 ranks of 1 or 2 threads, in every mode that
// distributes; the balance of the assignment; the rank messages' decoders on bad bytes.
#include <gtest/gtest.h>

#include <thread>

#include "sim/rank_schedule.h"
#include "sim/rank_work.h"
#include "sim_test_util.h"
#include "thread_ranks.h"

namespace tributary {
namespace {

// 10 clients, 5 per round, 6 rounds: every client trains several times, so error feedback's
// state goes to other ranks and back.
SimConfig Config() {
  SimConfig c = testing::SmallSyntheticConfig();
  c.data.num_clients = 10;
  c.run.round.rounds = 6;
  c.run.round.fit.epochs = 1;
  c.hetero.speed_tiers = "fast:0.5:4000,slow:0.5:1000";
  return c;
}

struct Distributed {
  SimResult result;
  uint64_t messages = 0, bytes = 0;
};

// Rank 0 runs; ranks 1.. serve on their own threads, each with its own simulator of the same
// config and data.
Result<Distributed> RunOnRanks(const SimConfig& c, int ranks) {
  TRIB_ASSIGN_OR_RETURN(DataSplits data, LoadDataSplits(c.data, true, true));
  testing::ThreadRanks world(ranks);
  std::vector<std::unique_ptr<Simulator>> sims;
  for (int r = 0; r < ranks; ++r) {
    TRIB_ASSIGN_OR_RETURN(std::unique_ptr<Simulator> sim, Simulator::Create(c, data));
    TRIB_RETURN_IF_ERROR(sim->SetRanks(world.link(r)));
    sims.push_back(std::move(sim));
  }
  std::vector<Status> served(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 1; r < ranks; ++r)
    threads.emplace_back([&, r] { served[static_cast<size_t>(r)] = sims[r]->Serve(); });
  Result<SimResult> result = sims[0]->Run();
  for (auto& t : threads) t.join();
  TRIB_RETURN_IF_ERROR(result.status());
  for (const Status& s : served) TRIB_RETURN_IF_ERROR(s);
  return Distributed{std::move(*result), world.messages(), world.bytes()};
}

void ExpectSameRun(const SimResult& a, const SimResult& b, const std::string& what) {
  EXPECT_EQ(a.model_hash, b.model_hash) << what;
  ASSERT_EQ(a.rounds.size(), b.rounds.size()) << what;
  for (size_t i = 0; i < a.rounds.size(); ++i) {
    EXPECT_EQ(a.rounds[i].accepted, b.rounds[i].accepted) << what << " round " << i;
    EXPECT_EQ(a.rounds[i].bytes_up, b.rounds[i].bytes_up) << what << " round " << i;
    EXPECT_EQ(a.rounds[i].bytes_down, b.rounds[i].bytes_down) << what << " round " << i;
    EXPECT_DOUBLE_EQ(a.rounds[i].sim_clock, b.rounds[i].sim_clock) << what << " round " << i;
    EXPECT_EQ(a.rounds[i].test_accuracy, b.rounds[i].test_accuracy) << what << " round " << i;
  }
}

struct Mode {
  const char* name;
  void (*apply)(SimConfig&);
};

const Mode kModes[] = {
    {"fedavg", [](SimConfig&) {}},
    {"fedadam", [](SimConfig& c) { c.run.strategy = "fedadam"; }},
    // Top-k keeps error feedback: each client's residual lives on rank 0 and travels.
    {"topk+q8 with error feedback", [](SimConfig& c) { c.run.round.codec = "topk(0.1)+q8"; }},
    {"dp (server)",
     [](SimConfig& c) {
       c.run.round.dp.enabled = true;
       c.run.round.dp.noise_seed = 11;
     }},
    {"sign-flip attack",
     [](SimConfig& c) {
       c.attack.kind = "sign_flip";
       c.attack.fraction = 0.3;
     }},
    {"alie attack against krum",
     [](SimConfig& c) {
       c.attack.kind = "alie";
       c.attack.fraction = 0.2;
       c.run.strategy = "krum(f=1)";
     }},
    {"dropouts, unreachable clients, over-selection",
     [](SimConfig& c) {
       c.hetero.dropout = 0.2;
       c.hetero.availability = 0.8;
       c.run.round.over_selection = 1.4;
     }},
    {"asynchronous",
     [](SimConfig& c) {
       c.run.round.mode = "async";
       c.run.round.async.concurrency = 4;
       c.run.round.async.buffer_size = 3;
       c.run.round.async.max_staleness = 6;
     }},
};

// Each mode on one layout of ranks and threads (they take turns), FedAvg on all four: the
// sanitizer passes run this too.
TEST(RankSimTest, EveryDistributedModeGivesTheOneProcessModelForAnyRanksAndThreads) {
  const std::pair<int, int> layouts[] = {{2, 1}, {3, 2}, {2, 2}, {3, 1}};
  size_t turn = 0;
  for (const Mode& mode : kModes) {
    SimConfig c = Config();
    mode.apply(c);
    c.threads = 1;
    Result<SimResult> one = testing::RunSimulation(c);
    ASSERT_TRUE(one.ok()) << mode.name << ": " << one.status().ToString();
    ASSERT_EQ(one->rounds.size(), 6u) << mode.name;
    std::vector<std::pair<int, int>> mine;
    if (&mode == &kModes[0])
      mine.assign(std::begin(layouts), std::end(layouts));
    else
      mine.push_back(layouts[turn++ % std::size(layouts)]);
    for (auto [ranks, threads] : mine) {
      {
        c.threads = threads;
        Result<Distributed> d = RunOnRanks(c, ranks);
        ASSERT_TRUE(d.ok()) << mode.name << ": " << d.status().ToString();
        ExpectSameRun(*one, d->result,
                      std::string(mode.name) + ", " + std::to_string(ranks) + " ranks of " +
                          std::to_string(threads) + " threads");
        // Work went out and results came back: one hello per rank, then batches and a stop.
        EXPECT_GT(d->messages, static_cast<uint64_t>(2 * (ranks - 1))) << mode.name;
      }
    }
  }
}

TEST(RankSimTest, TheModelGoesToEachRankOncePerRound) {
  SimConfig c = Config();
  c.threads = 1;
  Result<Distributed> d = RunOnRanks(c, 2);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  // Per round: a batch of jobs to rank 1 and its results back, then the new model to evaluate
  // and rank 1's slices back; plus the hello and the stop.
  EXPECT_EQ(d->messages, 4u * 6u + 2u);
  // Rank 0 accounted for each exchange: 6 batches and 6 evaluations, the busiest rank's compute,
  // the link's share and the others' waiting.
  EXPECT_EQ(d->result.rank_exchanges, 12);
  EXPECT_GT(d->result.rank_compute_seconds, 0.0);
  EXPECT_GE(d->result.rank_link_seconds, 0.0);
  EXPECT_GE(d->result.rank_idle_seconds, 0.0);
  EXPECT_LE(d->result.rank_idle_seconds, 2 * d->result.rank_compute_seconds);
  // The model twice per round (in the batch, and to evaluate), not once per client: bytes stay
  // under 2 models plus 5 updates per round.
  const uint64_t model_bytes = d->result.rounds[0].bytes_down / 5;  // one client's download
  EXPECT_LT(d->bytes, 6u * (2 * model_bytes + 5 * model_bytes));
  // Without server-side evaluation, only the batches.
  c.run.eval_every = 0;
  d = RunOnRanks(c, 2);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->messages, 2u * 6u + 2u);
}

// Server-side evaluation spread over the ranks gives the one-process numbers, bit for bit.
TEST(RankSimTest, EvaluationOverRanksGivesTheOneProcessNumbers) {
  SimConfig c = Config();
  c.threads = 1;
  Result<SimResult> one = testing::RunSimulation(c);
  ASSERT_TRUE(one.ok());
  for (int ranks : {2, 3, 5}) {
    Result<Distributed> d = RunOnRanks(c, ranks);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    for (size_t i = 0; i < one->rounds.size(); ++i) {
      EXPECT_EQ(d->result.rounds[i].test_accuracy, one->rounds[i].test_accuracy) << ranks;
      EXPECT_EQ(d->result.rounds[i].test_loss, one->rounds[i].test_loss) << ranks;
    }
  }
}

TEST(RankSimTest, SecureAggregationIsRefusedWithTheReason) {
  SimConfig c = Config();
  c.run.round.secagg.enabled = true;
  Result<DataSplits> data = LoadDataSplits(c.data, true, true);
  ASSERT_TRUE(data.ok());
  Result<std::unique_ptr<Simulator>> sim = Simulator::Create(c, *data);
  ASSERT_TRUE(sim.ok()) << sim.status().ToString();
  testing::ThreadRanks world(2);
  Status s = (*sim)->SetRanks(world.link(0));
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("secure aggregation"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("one process"), std::string::npos) << s.message();
  // One rank is one process: nothing to refuse.
  testing::ThreadRanks alone(1);
  EXPECT_TRUE((*sim)->SetRanks(alone.link(0)).ok());
}

TEST(RankSimTest, ARankWithOtherDataIsRefusedBeforeTheFirstRound) {
  SimConfig c = Config();
  SimConfig other = c;
  other.data.seed = c.data.seed + 1;  // another partition
  Result<DataSplits> data = LoadDataSplits(c.data, true, true);
  ASSERT_TRUE(data.ok());
  testing::ThreadRanks world(2);
  auto zero = Simulator::Create(c, *data);
  auto one = Simulator::Create(other, *data);
  ASSERT_TRUE(zero.ok() && one.ok());
  ASSERT_TRUE((*zero)->SetRanks(world.link(0)).ok());
  ASSERT_TRUE((*one)->SetRanks(world.link(1)).ok());
  Status served;
  std::thread t([&] { served = (*one)->Serve(); });
  Result<SimResult> r = (*zero)->Run();
  t.join();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("rank 1 loaded other data or another config"),
            std::string::npos)
      << r.status().message();
  EXPECT_TRUE(served.ok()) << served.ToString();  // told to stop
  EXPECT_TRUE((*zero)->engine().model_version() == 0);
}

TEST(RankScheduleTest, LongestFirstBalancesAndPinnedJobsStayOnRankZero) {
  // 10 jobs of costs 10..1 over 2 ranks: 28 and 27.
  std::vector<RankJobCost> jobs;
  for (uint64_t i = 0; i < 10; ++i) jobs.push_back({i, static_cast<double>(10 - i), false});
  std::vector<int> where = AssignToRanks(jobs, 2);
  double load[2] = {0, 0};
  for (size_t i = 0; i < jobs.size(); ++i) load[where[i]] += jobs[i].cost;
  EXPECT_EQ(load[0], 28);
  EXPECT_EQ(load[1], 27);
  // Pinned jobs go to rank 0 whatever their cost, and the others balance around them.
  jobs = {{0, 5, true}, {1, 5, true}, {2, 4, false}, {3, 4, false}, {4, 2, false}};
  where = AssignToRanks(jobs, 2);
  EXPECT_EQ(where, (std::vector<int>{0, 0, 1, 1, 1}));
  // One rank: everything on it; more ranks than jobs: one each.
  EXPECT_EQ(AssignToRanks(jobs, 1), std::vector<int>(5, 0));
  jobs = {{0, 3, false}, {1, 2, false}, {2, 1, false}};
  EXPECT_EQ(AssignToRanks(jobs, 4), (std::vector<int>{0, 1, 2}));
}

TEST(RankWorkTest, MessagesRoundTripAndEveryTruncationIsRefused) {
  RankWork w;
  w.models = {{1, 2, 3}, {4, 5}};
  RankJob j;
  j.slot = 3;
  j.client = 41;
  j.task = 9;
  j.attempt = 2;
  j.bytes_down = 1234;
  j.model = 1;
  j.shell = {7, 7, 7};
  j.state = CodecState{"topk(0.1)+q8", {0.5f, -1.0f}};
  w.jobs = {j, j};
  w.jobs[1].task.reset();
  w.jobs[1].state.reset();
  const std::string bytes = EncodeRankWork(w);
  Result<RankWork> back = DecodeRankWork(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->models, w.models);
  ASSERT_EQ(back->jobs.size(), 2u);
  EXPECT_EQ(back->jobs[0].client, 41u);
  EXPECT_EQ(back->jobs[0].task, std::optional<uint64_t>(9));
  EXPECT_EQ(back->jobs[0].state->residual, (std::vector<float>{0.5f, -1.0f}));
  EXPECT_FALSE(back->jobs[1].task.has_value());
  EXPECT_FALSE(back->jobs[1].state.has_value());
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_FALSE(DecodeRankWork(bytes.substr(0, n)).ok()) << n;
  // A job naming a model that is not there.
  w.jobs[0].model = 2;
  EXPECT_FALSE(DecodeRankWork(EncodeRankWork(w)).ok());

  RankResults r;
  RankJobResult res;
  res.slot = 1;
  res.code = static_cast<int32_t>(StatusCode::kInvalidArgument);
  res.message = "bad";
  res.bytes_up = 99;
  res.body = {1, 2, 3, 4};
  r.jobs = {res};
  const std::string rb = EncodeRankResults(r);
  Result<RankResults> rback = DecodeRankResults(rb);
  ASSERT_TRUE(rback.ok());
  EXPECT_EQ(rback->jobs[0].message, "bad");
  EXPECT_EQ(rback->jobs[0].body, res.body);
  for (size_t n = 0; n < rb.size(); ++n) EXPECT_FALSE(DecodeRankResults(rb.substr(0, n)).ok()) << n;
  // A huge claimed count is refused before anything is allocated.
  std::string huge = rb;
  const uint64_t count = uint64_t{1} << 60;
  huge.replace(4, sizeof count, reinterpret_cast<const char*>(&count), sizeof count);
  EXPECT_FALSE(DecodeRankResults(huge).ok());
  Result<RankHello> hello = DecodeRankHello(EncodeRankHello({2, 77}));
  ASSERT_TRUE(hello.ok());
  EXPECT_EQ(hello->rank, 2);
  EXPECT_EQ(hello->fingerprint, 77u);
  EXPECT_FALSE(DecodeRankHello("xxxx").ok());
}

}  // namespace
}  // namespace tributary
