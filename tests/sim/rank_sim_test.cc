// The distributed simulation (sim/rank_link.h) with ranks as threads of this process: the same
// model, round by round, for 1 process and 2 or 3 ranks of 1 or 2 threads, in every mode that
// distributes; the balance of the assignment; the rank messages' decoders on bad bytes.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <thread>
#include <tuple>
#include <vector>

#include "../client/temp_dir.h"

#include "sim/rank_schedule.h"
#include "sim/rank_work.h"
#include "sim/sim_checkpoint.h"
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

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
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
    // As ServeSimulation does: only rank 0 resumes and writes checkpoints.
    SimConfig mine = c;
    if (r > 0) {
      mine.resume = false;
      mine.run.checkpoint_dir.clear();
    }
    TRIB_ASSIGN_OR_RETURN(std::unique_ptr<Simulator> sim, Simulator::Create(mine, data));
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

// The first 3 rounds of `c` on 2 ranks, checkpointed to `dir` (to resume from).
Result<Distributed> FirstThreeRoundsOnTwoRanks(const SimConfig& c, const std::string& dir) {
  SimConfig first = c;
  first.run.checkpoint_dir = dir;
  first.run.round.rounds = 3;
  return RunOnRanks(first, 2);
}

// `exact_bytes` false: with secure aggregation the protocol's messages carry ECDSA signatures made
// with random nonces, whose DER encoding varies by a byte or two, so even two runs in one process
// differ in their byte counts by a few bytes per client (the model does not).
void ExpectSameRun(const SimResult& a, const SimResult& b, const std::string& what,
                   bool exact_bytes = true) {
  EXPECT_EQ(a.model_hash, b.model_hash) << what;
  ASSERT_EQ(a.rounds.size(), b.rounds.size()) << what;
  for (size_t i = 0; i < a.rounds.size(); ++i) {
    EXPECT_EQ(a.rounds[i].accepted, b.rounds[i].accepted) << what << " round " << i;
    const double slack = exact_bytes ? 0.0 : 4.0 * 16 * static_cast<double>(a.rounds[i].selected);
    EXPECT_NEAR(static_cast<double>(a.rounds[i].bytes_up),
                static_cast<double>(b.rounds[i].bytes_up), slack)
        << what << " round " << i;
    EXPECT_NEAR(static_cast<double>(a.rounds[i].bytes_down),
                static_cast<double>(b.rounds[i].bytes_down), slack)
        << what << " round " << i;
    EXPECT_DOUBLE_EQ(a.rounds[i].sim_clock, b.rounds[i].sim_clock) << what << " round " << i;
    EXPECT_EQ(a.rounds[i].tier_bytes_up, b.rounds[i].tier_bytes_up) << what << " round " << i;
    EXPECT_EQ(a.rounds[i].split_batches, b.rounds[i].split_batches) << what << " round " << i;
    EXPECT_EQ(a.rounds[i].split_bytes_up, b.rounds[i].split_bytes_up) << what << " round " << i;
    EXPECT_EQ(a.rounds[i].test_accuracy, b.rounds[i].test_accuracy) << what << " round " << i;
  }
}

// Buffered asynchronous steps of 3 updates, `concurrency` clients training at once.
void Asynchronous(SimConfig& c, int64_t concurrency) {
  c.run.round.mode = "async";
  c.run.round.async.concurrency = concurrency;
  c.run.round.async.buffer_size = 3;
  c.run.round.async.max_staleness = 6;
}

struct Mode {
  const char* name;
  void (*apply)(SimConfig&);
};

// Each mode is its own test case (ctest runs them side by side). Under ThreadSanitizer
// (scripts/test's concurrency pass) a run is about 40x slower, and these took 11 minutes in all:
// there they run 3 rounds instead of 6, which still sends every message kind of each mode through
// the ranks more than once.
constexpr size_t kModeRounds = testing::kUnderThreadSanitizer ? 3 : 6;

const Mode kModes[] = {
    {"fedavg", [](SimConfig&) {}},
    {"fedadam", [](SimConfig& c) { c.run.strategy = "fedadam"; }},
    {"fednova", [](SimConfig& c) { c.run.strategy = "fednova"; }},
    // Each client's control variate lives on rank 0 and travels with its job.
    {"scaffold", [](SimConfig& c) { c.run.strategy = "scaffold(clients=10)"; }},
    // Attackers under SCAFFOLD send control deltas too (the crafted ones claim honest steps).
    {"scaffold under an alie attack",
     [](SimConfig& c) {
       c.run.strategy = "scaffold(clients=10)";
       c.attack.kind = "alie";
       c.attack.fraction = 0.2;
     }},
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
    // The clients' key phases and masking stay on rank 0; the ranks train.
    {"secure aggregation", [](SimConfig& c) { c.run.round.secagg.enabled = true; }},
    {"secure aggregation with dropouts",
     [](SimConfig& c) {
       c.run.round.secagg.enabled = true;
       c.hetero.dropout = 0.15;
       c.run.round.over_selection = 1.4;
     }},
    // NIID-Bench's partitions: every rank computes the split and adds a client's feature noise.
    {"labels:2 with feature noise", [](SimConfig& c) { c.data.partition = "labels:2+noise:0.2"; }},
    {"quantity skew", [](SimConfig& c) { c.data.partition = "quantity:0.5,min_size=20"; }},
    // The aggregation tier (sim/sim_tier.h) on rank 0; the ranks train its clients' jobs.
    {"through 3 simulated aggregators, with over-selection and error feedback",
     [](SimConfig& c) {
       c.tier.aggregators = 3;
       c.tier.latency_ms = 20;
       c.run.round.over_selection = 1.4;
       c.run.round.codec = "topk(0.1)+q8";
     }},
    {"asynchronous", [](SimConfig& c) { Asynchronous(c, 4); }},
    {"asynchronous with secure aggregation",
     [](SimConfig& c) {
       Asynchronous(c, 6);
       c.run.round.clients_per_round = 3;
       c.run.round.secagg.enabled = true;
     }},
};

// The modes whose messages between ranks differ in kind and in timing, which the ThreadSanitizer
// pass runs: FedAvg (every layout), the secure sessions with dropouts (keys and masked inputs stay
// on rank 0 while jobs are out), the tier and the asynchronous secure cohorts (jobs of several
// groups or cohorts in flight at once). The other modes change what a job computes, not which
// threads touch it; there they took about 100 of the pass's 500 s of test time (2026-12-07).
bool RunsUnderThreadSanitizer(const Mode& mode) {
  const std::string name = mode.name;
  return name == "fedavg" || name == "secure aggregation with dropouts" ||
         name.starts_with("through 3 simulated aggregators") ||
         name == "asynchronous with secure aggregation";
}

// Each mode on one layout of ranks and threads (the modes take turns), FedAvg on all four: the
// sanitizer passes run this too. Under ThreadSanitizer, which needs the ranks' threads and not
// the comparison, the one-process reference is not run (the optimized build compares), and only
// the modes of RunsUnderThreadSanitizer run.
class RankModeTest : public ::testing::TestWithParam<size_t> {};

TEST_P(RankModeTest, GivesTheOneProcessModelForAnyRanksAndThreads) {
  const std::pair<int, int> layouts[] = {{2, 1}, {3, 2}, {2, 2}, {3, 1}};
  const size_t index = GetParam();
  const Mode& mode = kModes[index];
  if (!RunsUnderThreadSanitizer(mode)) {
    TRIB_SKIP_UNDER_TSAN("RankModeTest's fedavg, secure-aggregation, tier and asynchronous cases");
  }
  SimConfig c = Config();
  c.run.round.rounds = kModeRounds;
  mode.apply(c);
  c.threads = 1;
  Result<SimResult> one =
      testing::kUnderThreadSanitizer ? Result<SimResult>(SimResult{}) : testing::RunSimulation(c);
  ASSERT_TRUE(one.ok()) << mode.name << ": " << one.status().ToString();
  if (!testing::kUnderThreadSanitizer) {
    ASSERT_EQ(one->rounds.size(), kModeRounds) << mode.name;
  }
  std::vector<std::pair<int, int>> mine;
  if (index == 0)
    mine.assign(std::begin(layouts), std::end(layouts));
  else
    mine.push_back(layouts[(index - 1) % std::size(layouts)]);
  for (auto [ranks, threads] : mine) {
    c.threads = threads;
    Result<Distributed> d = RunOnRanks(c, ranks);
    ASSERT_TRUE(d.ok()) << mode.name << ": " << d.status().ToString();
    // Work went out and results came back: one hello per rank, then batches and a stop.
    EXPECT_GT(d->messages, static_cast<uint64_t>(2 * (ranks - 1))) << mode.name;
    if (testing::kUnderThreadSanitizer) {
      EXPECT_EQ(d->result.rounds.size(), kModeRounds) << mode.name;
      continue;
    }
    const bool secagg = c.run.round.secagg.enabled;
    ExpectSameRun(*one, d->result,
                  std::string(mode.name) + ", " + std::to_string(ranks) + " ranks of " +
                      std::to_string(threads) + " threads",
                  !secagg);
    if (secagg) {
      // The protocol ran, with the same clients as in one process, and the same bytes but for the
      // signatures' few.
      const SimRound got = d->result.SecAggTotals(), want = one->SecAggTotals();
      EXPECT_GT(got.secagg_clients, 0) << mode.name;
      EXPECT_EQ(got.secagg_clients, want.secagg_clients) << mode.name;
      EXPECT_NEAR(static_cast<double>(got.secagg_bytes_up),
                  static_cast<double>(want.secagg_bytes_up),
                  8.0 * static_cast<double>(want.secagg_clients))
          << mode.name;
    }
  }
}

// The case's name: the mode's, in letters and digits ("topk+q8 with error feedback" ->
// "TopkQ8WithErrorFeedback").
std::string ModeCaseName(const ::testing::TestParamInfo<size_t>& info) {
  std::string out;
  bool upper = true;
  for (const char ch : std::string(kModes[info.param].name)) {
    if (std::isalnum(static_cast<unsigned char>(ch))) {
      out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(ch))) : ch;
      upper = false;
    } else {
      upper = true;
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(EveryDistributedMode, RankModeTest,
                         ::testing::Range(size_t{0}, std::size(kModes)), ModeCaseName);

// Split learning (its own test: under ThreadSanitizer the modes above take most of 5 minutes).
// SFLV1's server copies train on the jobs' ranks and join rank 0's average; SFLV2's one server
// part keeps every job on rank 0. Either way the model, the rounds and the split figures are the
// one process's.
// Under ThreadSanitizer SFLV1 runs on 3 ranks of 2 threads only.
TEST(RankSimTest, SplitLearningGivesTheOneProcessModelOnRanks) {
  // (mode, ranks, threads, split.head): the last, U-shaped (the devices also hold the last
  // layers and the labels), takes two round trips a batch with its server copy on the rank.
  using Layout = std::tuple<const char*, int, int, int>;
  // Under ThreadSanitizer the first only (43 s for three): SFLV1's server copies on 3 ranks of 2
  // threads each; the others add no thread (SFLV2 keeps every job on rank 0).
  std::vector<Layout> layouts = {{"sflv1", 3, 2, 0}};
  if (!testing::kUnderThreadSanitizer)
    layouts.insert(layouts.end(), {{"sflv2", 3, 1, 0}, {"sflv1", 3, 1, 4}, {"sflv1", 2, 1, 0}});
  for (auto [mode, ranks, threads, head] : layouts) {
    SimConfig c = Config();
    c.run.round.split.mode = mode;
    c.run.round.split.head = head;
    c.threads = threads;
    Result<Distributed> d = RunOnRanks(c, ranks);
    ASSERT_TRUE(d.ok()) << mode << ": " << d.status().ToString();
    const std::string what = fmt::format("split {}{}, {} ranks of {} threads", mode,
                                         head ? " (U-shaped)" : "", ranks, threads);
    // The one-process run to compare with: not under ThreadSanitizer, which needs the ranks'
    // threads, not the comparison (the optimized build makes it).
    if (!testing::kUnderThreadSanitizer) {
      c.threads = 1;
      Result<SimResult> one = testing::RunSimulation(c);
      ASSERT_TRUE(one.ok()) << mode << ": " << one.status().ToString();
      ExpectSameRun(*one, d->result, what);
    }
    EXPECT_GT(d->result.rounds.back().split_batches, 0u) << what;
    if (std::string(mode) == "sflv1") {
      // Jobs went to the other ranks (SFLV2 keeps them all on rank 0).
      EXPECT_GT(d->messages, static_cast<uint64_t>(2 * (ranks - 1))) << what;
      EXPECT_GT(d->result.rank_exchanges, 0) << what;
    }
  }
}

TEST(RankSimTest, TheModelGoesToEachRankOncePerRound) {
  TRIB_SKIP_UNDER_TSAN("RankSimTest.EvaluationOverRanksGivesTheOneProcessNumbers");
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

// Server-side evaluation spread over the ranks gives the one-process numbers, bit for bit (under
// ThreadSanitizer on 5 ranks only, without the one-process run: TSan needs the ranks' threads,
// not the comparison, which the optimized build makes).
TEST(RankSimTest, EvaluationOverRanksGivesTheOneProcessNumbers) {
  SimConfig c = Config();
  c.threads = 1;
  Result<SimResult> one =
      testing::kUnderThreadSanitizer ? Result<SimResult>(SimResult{}) : testing::RunSimulation(c);
  ASSERT_TRUE(one.ok());
  const std::vector<int> rank_counts =
      testing::kUnderThreadSanitizer ? std::vector<int>{5} : std::vector<int>{2, 3, 5};
  for (int ranks : rank_counts) {
    Result<Distributed> d = RunOnRanks(c, ranks);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    ASSERT_FALSE(d->result.rounds.empty());
    EXPECT_GT(d->result.rounds.back().test_accuracy, 0.0) << ranks;
    for (size_t i = 0; i < one->rounds.size(); ++i) {
      EXPECT_EQ(d->result.rounds[i].test_accuracy, one->rounds[i].test_accuracy) << ranks;
      EXPECT_EQ(d->result.rounds[i].test_loss, one->rounds[i].test_loss) << ranks;
    }
  }
}

// Half the clients too slow for the deadline, so that some miss rounds and cool down (the rounds
// close at the deadline with the fast ones' updates).
void MissTheDeadline(SimConfig& c) {
  c.hetero.speed_tiers = "fast:0.5:4000,slow:0.5:300";
  c.run.round.round_timeout = std::chrono::milliseconds(400);
  c.run.round.min_completed = 2;
  c.run.round.over_selection = 1.4;
}

// A run stopped after round 3 of 6 and resumed on other ranks, or after a damaged newest state
// from round 2, ends with the model of the run that never stopped, with every round's record.
TEST(RankSimTest, AResumedRunOnOtherRanksGivesTheModelOfOneUnbrokenProcess) {
  TRIB_SKIP_UNDER_TSAN("RankModeTest's distributed modes (dropouts and error feedback among them)");
  SimConfig c = Config();
  c.run.round.codec = "topk(0.1)+q8";  // error feedback: residuals in the checkpoint
  MissTheDeadline(c);                  // cool-downs in the checkpoint
  c.hetero.dropout = 0.2;
  c.hetero.availability = 0.8;
  c.threads = 1;
  Result<SimResult> whole = testing::RunSimulation(c);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  ASSERT_EQ(whole->rounds.size(), 6u);

  for (const bool damaged : {false, true}) {
    testing::TempDir dir;
    Result<Distributed> part = FirstThreeRoundsOnTwoRanks(c, dir.path());
    ASSERT_TRUE(part.ok()) << part.status().ToString();
    ASSERT_EQ(part->result.rounds.size(), 3u);
    for (uint64_t r = 1; r <= 3; ++r)
      EXPECT_TRUE(std::filesystem::exists(SimCheckpointPath(dir.path(), r))) << r;
    // What the state holds: cool-downs, residuals, the rounds so far.
    Result<SimCheckpoint> st = LoadSimCheckpoint(Env::Default(), dir.path(), 3, "");
    ASSERT_EQ(st.status().code(), StatusCode::kCorruption);  // another run's uid
    EXPECT_NE(st.status().message().find("another run"), std::string::npos);
    if (damaged) {
      // A byte of round 3's state changed: its checkpoint is skipped for round 2's.
      const std::string path = SimCheckpointPath(dir.path(), 3);
      std::string bytes = ReadBytes(path);
      ASSERT_GT(bytes.size(), 100u);
      bytes[bytes.size() / 2] ^= 1;
      std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    }

    SimConfig rest = c;
    rest.run.checkpoint_dir = dir.path();
    rest.resume = true;
    Result<Distributed> resumed = RunOnRanks(rest, damaged ? 1 : 3);
    ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
    ExpectSameRun(*whole, resumed->result, damaged ? "resumed from round 2" : "resumed on 3 ranks");
    // The newest 3 rounds' states are kept, the older removed.
    for (uint64_t r = 1; r <= 6; ++r)
      EXPECT_EQ(std::filesystem::exists(SimCheckpointPath(dir.path(), r)), r >= 4) << r;
  }
}

// run.federate = "unfrozen" (docs/models.md): each rank's virtual clients take the frozen tensors
// from that rank's own run, so 3 ranks give the one process's model, rounds and bytes; and a run
// stopped after round 3 and resumed on 3 ranks (error feedback's residuals of the federated
// tensors in its state) ends with the unbroken run's model. After the resume every client's first
// task brings the frozen tensors again, as after a real coordinator's restart, so round 4 sends
// more bytes down than the unbroken run's round 4.
TEST(RankSimTest, AFederatedHeadOnRanksAndResumedGivesTheOneProcessModel) {
  SimConfig c = Config();
  const std::string model = ::testing::TempDir() + "/rank_frozen_body.toml";
  {
    std::ofstream f(model);
    f << "name = \"rank_frozen_body\"\nlayers = [\n  { type = \"flatten\" },\n"
      << "  { type = \"dense\", units = 24, name = \"body\", frozen = true },\n"
      << "  { type = \"relu\" },\n  { type = \"dense\", units = 10, name = \"head\" },\n]\n";
  }
  c.run.model = model;
  c.run.round.federate = "unfrozen";
  c.run.round.codec = "topk(0.1)+q8";
  c.threads = 1;
  Result<SimResult> whole = testing::RunSimulation(c);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  ASSERT_EQ(whole->rounds.size(), 6u);
  c.threads = 2;
  Result<Distributed> d = RunOnRanks(c, 3);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ExpectSameRun(*whole, d->result, "federated head, 3 ranks of 2 threads");
  c.threads = 1;

  testing::TempDir dir;
  Result<Distributed> part = FirstThreeRoundsOnTwoRanks(c, dir.path());
  ASSERT_TRUE(part.ok()) << part.status().ToString();
  SimConfig rest = c;
  rest.run.checkpoint_dir = dir.path();
  rest.resume = true;
  Result<Distributed> resumed = RunOnRanks(rest, 3);
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  EXPECT_EQ(resumed->result.model_hash, whole->model_hash);
  ASSERT_EQ(resumed->result.rounds.size(), 6u);
  EXPECT_GT(resumed->result.rounds[3].bytes_down, whole->rounds[3].bytes_down);
  for (size_t i = 0; i < 6; ++i)
    EXPECT_EQ(resumed->result.rounds[i].accepted, whole->rounds[i].accepted) << i;
}

// Dropout's masks come from each fit's seed and step: a run of a model with dropout and a residual
// connection, stopped after round 3 and resumed on other ranks, ends with the unbroken run's model.
TEST(RankSimTest, AResumedRunWithDropoutGivesTheUnbrokenModel) {
  testing::TempDir dir;
  const std::string model = dir.path() + "/dropout_residual.toml";
  std::ofstream(model) << "layers = [\n  { type = \"flatten\" },\n"
                          "  { type = \"dense\", units = 24 },\n  { type = \"relu\" },\n"
                          "  { type = \"dropout\", rate = 0.4 },\n"
                          "  { type = \"dense\", units = 24 },\n  { type = \"add\", from = 2 },\n"
                          "  { type = \"dense\" },\n]\n";
  SimConfig c = Config();
  c.run.model = model;
  c.threads = 1;
  Result<SimResult> whole = testing::RunSimulation(c);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  ASSERT_EQ(whole->rounds.size(), 6u);
  testing::TempDir checkpoints;
  Result<Distributed> part = FirstThreeRoundsOnTwoRanks(c, checkpoints.path());
  ASSERT_TRUE(part.ok()) << part.status().ToString();
  SimConfig rest = c;
  rest.run.checkpoint_dir = checkpoints.path();
  rest.resume = true;
  Result<Distributed> resumed = RunOnRanks(rest, 3);
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  ExpectSameRun(*whole, resumed->result, "dropout, resumed on 3 ranks");
  // The wall clock goes on from the restored rounds', as the simulated one does: rounds 4-6's
  // wall_clock and the total include rounds 1-3's time (they started again from 0).
  const std::vector<SimRound>& rounds = resumed->result.rounds;
  ASSERT_EQ(rounds.size(), 6u);
  for (size_t i = 1; i < rounds.size(); ++i)
    EXPECT_GE(rounds[i].wall_clock, rounds[i - 1].wall_clock) << "round " << i + 1;
  EXPECT_GE(rounds[3].wall_clock, rounds[2].wall_clock + rounds[3].wall_seconds * 0.99);
  EXPECT_GE(resumed->result.wall_seconds, rounds.back().wall_clock);
}

// SCAFFOLD's state is the server's control variate (in the coordinator's checkpoint) and every
// client's (in the simulator's): a run stopped after round 3 and resumed on other ranks ends with
// the unbroken run's model, and the state holds a control variate for each client that trained.
TEST(RankSimTest, AResumedScaffoldRunGivesTheUnbrokenModel) {
  TRIB_SKIP_UNDER_TSAN("RankModeTest's distributed modes (scaffold among them)");
  SimConfig c = Config();
  c.run.strategy = "scaffold(clients=10)";
  c.threads = 1;
  Result<SimResult> whole = testing::RunSimulation(c);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  ASSERT_EQ(whole->rounds.size(), 6u);
  if (!testing::kUnderThreadSanitizer) {  // one process, one thread: nothing for TSan to watch
    SimConfig plain = c;
    plain.run.strategy = "fedavg";
    Result<SimResult> fedavg = testing::RunSimulation(plain);
    ASSERT_TRUE(fedavg.ok());
    EXPECT_NE(fedavg->model_hash, whole->model_hash) << "the control variates changed nothing";
  }

  testing::TempDir dir;
  Result<Distributed> part = FirstThreeRoundsOnTwoRanks(c, dir.path());
  ASSERT_TRUE(part.ok()) << part.status().ToString();
  const std::string bytes = ReadBytes(SimCheckpointPath(dir.path(), 3));
  Result<SimCheckpoint> st = DecodeSimCheckpoint(bytes);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  int64_t trained = 0;
  for (const SimRound& r : st->rounds) trained += r.accepted;
  EXPECT_GE(st->controls.size(), 5u);  // 5 a round, 3 rounds: at least one round's clients
  EXPECT_LE(static_cast<int64_t>(st->controls.size()), trained);
  for (const auto& [client, control] : st->controls) EXPECT_GT(control.size(), 0u) << client;
  // A control variate of another size is refused when restored, naming the client.
  ControlStore store;
  std::map<uint64_t, std::vector<float>> bad = st->controls;
  bad.begin()->second.pop_back();
  Status refused = store.Restore(bad, st->controls.begin()->second.size());
  EXPECT_NE(refused.message().find("client " + std::to_string(bad.begin()->first)),
            std::string::npos)
      << refused.message();
  EXPECT_EQ(store.size(), 0u);

  SimConfig rest = c;
  rest.run.checkpoint_dir = dir.path();
  rest.resume = true;
  Result<Distributed> resumed = RunOnRanks(rest, 3);
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  ExpectSameRun(*whole, resumed->result, "scaffold resumed on 3 ranks");
}

TEST(RankSimTest, ScaffoldWithTrainersThatIgnoreItsCorrectionIsRefusedAtStartUp) {
  SimConfig c = Config();
  c.run.strategy = "scaffold";
  c.trainer = "noop";
  Result<DataSplits> data = LoadDataSplits(c.data, true, true);
  ASSERT_TRUE(data.ok());
  Result<std::unique_ptr<Simulator>> sim = Simulator::Create(c, *data);
  ASSERT_FALSE(sim.ok());
  EXPECT_NE(sim.status().message().find("key 'run.strategy' = 'scaffold' needs trainers that "
                                        "apply SCAFFOLD's drift correction"),
            std::string::npos)
      << sim.status().ToString();
  EXPECT_NE(sim.status().message().find("sim.trainer = 'noop'"), std::string::npos);
}

TEST(RankSimTest, TheSimulatorStateHoldsWhatTheRunNeedsAndRefusesDamage) {
  TRIB_SKIP_UNDER_TSAN("RankModeTest's distributed modes (dropouts and error feedback among them)");
  SimConfig c = Config();
  c.run.round.codec = "topk(0.1)+q8";
  MissTheDeadline(c);
  testing::TempDir dir;
  c.run.checkpoint_dir = dir.path();
  c.run.round.rounds = 3;
  Result<DataSplits> data = LoadDataSplits(c.data, true, true);
  ASSERT_TRUE(data.ok());
  Result<std::unique_ptr<Simulator>> sim = Simulator::Create(c, *data);
  ASSERT_TRUE(sim.ok()) << sim.status().ToString();
  Result<SimResult> r = (*sim)->Run();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::string bytes = ReadBytes(SimCheckpointPath(dir.path(), 3));
  Result<SimCheckpoint> decoded = DecodeSimCheckpoint(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->rounds_done, 3u);
  EXPECT_EQ(decoded->rounds.size(), 3u);
  EXPECT_DOUBLE_EQ(decoded->sim_clock, r->sim_seconds);
  EXPECT_EQ(decoded->residuals.size(), (*sim)->residuals().size());
  EXPECT_GT(decoded->residuals.size(), 0u);
  EXPECT_EQ(decoded->cooldowns.size(), (*sim)->engine().registry().cooldowns().size());
  EXPECT_GT(decoded->cooldowns.size(), 0u) << "the seed should give clients that missed a round";
  EXPECT_EQ(decoded->kept, (std::vector<uint64_t>{1, 2}));
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(decoded->rounds[i].accepted, r->rounds[i].accepted);
    EXPECT_EQ(decoded->rounds[i].cum_bytes_up, r->rounds[i].cum_bytes_up);
  }
  // Every truncation and a changed byte anywhere are refused, naming the simulator state.
  for (size_t n = 0; n < bytes.size(); n += std::max<size_t>(1, bytes.size() / 97)) {
    Result<SimCheckpoint> cut = DecodeSimCheckpoint(bytes.substr(0, n));
    ASSERT_EQ(cut.status().code(), StatusCode::kCorruption) << n;
    std::string flipped = bytes;
    flipped[n] ^= 0x20;
    Result<SimCheckpoint> bad = DecodeSimCheckpoint(flipped);
    ASSERT_EQ(bad.status().code(), StatusCode::kCorruption) << n;
    EXPECT_NE(bad.status().message().find("simulator state"), std::string::npos);
  }
  // A well-formed record with an impossible residual is refused when restored.
  const uint64_t model_size = (*sim)->engine().model().size();
  ResidualStore store(0, 1.0);
  std::map<uint64_t, ResidualStore::Entry> entries = decoded->residuals;
  entries.begin()->second.values.push_back(1.0f);
  Status refused = store.Restore(entries, model_size);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("client"), std::string::npos) << refused.message();
  EXPECT_EQ(store.size(), 0u);
  // A sparse entry claiming a huge length (Get would allocate it) is refused before any use.
  entries = decoded->residuals;
  entries.begin()->second.index = {0};
  entries.begin()->second.values = {1.0f};
  entries.begin()->second.size = uint64_t{1} << 60;
  refused = store.Restore(entries, model_size);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find(fmt::format("not the model's {} parameters", model_size)),
            std::string::npos)
      << refused.message();
  EXPECT_EQ(store.size(), 0u);
  EXPECT_TRUE(store.Restore(decoded->residuals, model_size).ok());
  EXPECT_EQ(store.size(), decoded->residuals.size());
}

TEST(RankSimTest, ResumingIsRefusedWithReasons) {
  SimConfig c = Config();
  c.resume = true;
  Status s = c.Validate();
  EXPECT_NE(s.message().find("output.checkpoint_dir"), std::string::npos) << s.message();
  testing::TempDir dir;
  c.run.checkpoint_dir = dir.path();
  c.run.keep_checkpoints = 1;  // a crash between checkpoint and state file would leave no pair
  s = c.Validate();
  EXPECT_NE(s.message().find("output.keep_checkpoints"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("must be >= 2"), std::string::npos) << s.message();
  c.run.keep_checkpoints = 2;
  Result<DataSplits> data = LoadDataSplits(c.data, true, true);
  ASSERT_TRUE(data.ok());
  Result<std::unique_ptr<Simulator>> none = Simulator::Create(c, *data);
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("no checkpoint"), std::string::npos);
  // A checkpoint without the simulator's state (a coordinator's, or the state lost) is skipped.
  {
    SimConfig first = c;
    first.resume = false;
    first.run.round.rounds = 1;
    Result<std::unique_ptr<Simulator>> sim = Simulator::Create(first, *data);
    ASSERT_TRUE(sim.ok()) << sim.status().ToString();
    ASSERT_TRUE((*sim)->Run().ok());
  }
  std::filesystem::remove(SimCheckpointPath(dir.path(), 1));
  Result<std::unique_ptr<Simulator>> lost = Simulator::Create(c, *data);
  EXPECT_EQ(lost.status().code(), StatusCode::kCorruption);
  EXPECT_NE(lost.status().message().find("no simulator state"), std::string::npos)
      << lost.status().message();
  SimConfig async = Config();
  Asynchronous(async, 4);
  async.run.checkpoint_dir = dir.path();
  s = async.Validate();
  EXPECT_NE(s.message().find("tasks in flight"), std::string::npos) << s.message();
}

// A resume with settings that change the model is refused, naming each changed key and both
// values; outputs, threads and a longer run are not such settings.
TEST(RankSimTest, ResumingWithOtherSettingsIsRefusedNamingTheKeys) {
  TRIB_SKIP_UNDER_TSAN("RankSimTest.AFederatedHeadOnRanksAndResumedGivesTheOneProcessModel");
  testing::TempDir dir;
  SimConfig c = Config();
  c.run.checkpoint_dir = dir.path();
  c.run.round.rounds = 2;
  Result<DataSplits> data = LoadDataSplits(c.data, true, true);
  ASSERT_TRUE(data.ok());
  {
    Result<std::unique_ptr<Simulator>> sim = Simulator::Create(c, *data);
    ASSERT_TRUE(sim.ok()) << sim.status().ToString();
    ASSERT_TRUE((*sim)->Run().ok());
  }
  SimConfig other = c;
  other.resume = true;
  other.hetero.dropout = 0.2;
  other.run.round.fit.lr = 0.5f;
  Result<std::unique_ptr<Simulator>> refused = Simulator::Create(other, *data);
  ASSERT_FALSE(refused.ok());
  const std::string m = refused.status().message();
  // Said once, as a refusal of the settings: not "no usable checkpoint", once per file, as if
  // the files were damaged (the older ones are the same run's, refused alike).
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << refused.status();
  EXPECT_EQ(m.find("no usable checkpoint"), std::string::npos) << m;
  EXPECT_EQ(m.find("written with other settings"), m.rfind("written with other settings")) << m;
  EXPECT_NE(m.find("written with other settings"), std::string::npos) << m;
  EXPECT_NE(m.find("hetero.dropout: was 0.0, now 0.2"), std::string::npos) << m;
  EXPECT_NE(m.find("fit.lr: was 0.1"), std::string::npos) << m;
  SimConfig same = c;
  same.resume = true;
  same.threads = 2;
  same.run.round.rounds = 3;
  same.report_dir = dir.file("elsewhere");
  Result<std::unique_ptr<Simulator>> resumed = Simulator::Create(same, *data);
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  Result<SimResult> r = (*resumed)->Run();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->rounds.size(), 3u);
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
