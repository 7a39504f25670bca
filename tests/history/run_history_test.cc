// RunHistory (history/run_history.h): a run's events become its rows, with the numbers the events
// carry; commits come per round, not per event; a resumed run continues its record; a failing
// database turns the history off without stopping the run; a writer killed in the middle of a
// transaction leaves the history as of its last commit; readers read while the run writes.
#include "history/run_history.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "coordinator/checkpoint.h"
#include "tests/core/log_capture.h"
#include "tests/history/temp_dir.h"

namespace tributary {
namespace {

using testing::TempDir;

std::unique_ptr<HistoryDb> Reader(const std::string& path) {
  Result<std::unique_ptr<HistoryDb>> db = HistoryDb::Open(path, HistoryDb::Mode::kReadOnly);
  EXPECT_TRUE(db.ok()) << db.status();
  return db.ok() ? std::move(*db) : nullptr;
}

std::unique_ptr<RunHistory> Writer(const std::string& path, const std::string& checkpoint_dir) {
  Result<std::unique_ptr<RunHistory>> h = RunHistory::Open(
      path, {"tributary-coordinator", R"({"run.rounds":3})", checkpoint_dir, "events.jsonl"});
  EXPECT_TRUE(h.ok()) << h.status();
  return h.ok() ? std::move(*h) : nullptr;
}

RunStarted Started(int64_t rounds, uint64_t rounds_done = 0, std::string resumed_from = "") {
  RunStarted s;
  s.model = "cnn";
  s.strategy = "fedavg";
  s.rounds = rounds;
  s.clients_per_round = 2;
  s.rounds_done = rounds_done;
  s.resumed_from = std::move(resumed_from);
  return s;
}

RoundClosed Closed(uint64_t round, int64_t completed, uint64_t bytes_up, double loss = 0,
                   double accuracy = 0) {
  RoundClosed c;
  c.summary.round = round;
  c.summary.model_version = round;
  c.summary.attempts = 1;
  c.summary.selected = 2;
  c.summary.accepted = completed;
  c.summary.bytes_up = bytes_up;
  c.summary.bytes_down = 2 * bytes_up;
  c.summary.num_examples = 100 * static_cast<uint64_t>(completed);
  c.summary.duration_s = 1.5;
  if (accuracy > 0) c.evaluation = Evaluated{round, round, loss, accuracy, 200};
  return c;
}

// A whole round as the driver publishes it: opened, `n` updates of 1000 bytes, the checkpoint,
// the evaluation and the close.
void PlayRound(RunHistory& h, uint64_t round, int n, const std::string& checkpoint) {
  h.OnEvent(RoundOpened{round, 1, n, round - 1});
  for (int i = 0; i < n; ++i)
    h.OnEvent(UpdateAccepted{round, "c" + std::to_string(i), 100, 1000, std::nullopt});
  h.OnEvent(CheckpointWritten{round, checkpoint, "", 0.01});
  h.OnEvent(Evaluated{round, round, 1.0 / static_cast<double>(round), 0.5, 200});
  h.OnEvent(
      Closed(round, n, 1000 * static_cast<uint64_t>(n), 1.0 / static_cast<double>(round), 0.5));
}

TEST(RunHistoryTest, EventsBecomeRowsWithTheirNumbers) {
  TempDir dir;
  const std::string db_path = dir.path("history.db");
  std::unique_ptr<RunHistory> h = Writer(db_path, dir.path("ck"));
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->run_id(), 0);
  h->OnEvent(Started(2));
  ASSERT_EQ(h->run_id(), 1);
  std::unique_ptr<HistoryDb> reader = Reader(db_path);
  ASSERT_NE(reader, nullptr);

  // Round 1: three updates (one refused), then the checkpoint and the evaluation.
  h->OnEvent(RoundOpened{1, 1, 3, 0});
  h->OnEvent(UpdateAccepted{1, "a", 100, 4000, std::nullopt});
  h->OnEvent(UpdateAccepted{1, "b", 150, 4000, std::nullopt});
  h->OnEvent(UpdateRefused{1, "c", "late", "FailedPrecondition"});
  // Updates wait for the next commit: readers see the round opened, with nothing in it yet.
  std::vector<RoundRecord> rounds = *reader->GetRounds(1);
  ASSERT_EQ(rounds.size(), 1u);
  EXPECT_EQ(rounds[0].selected, 3);
  EXPECT_EQ(rounds[0].accepted, 0);
  EXPECT_FALSE(rounds[0].closed_at.has_value());
  EXPECT_EQ(reader->EventsAfter(1, 0, 0)->size(), 2u);  // run_started, round_opened
  h->OnEvent(CheckpointWritten{1, "/ck/checkpoint.bin", "", 0.02});
  rounds = *reader->GetRounds(1);
  EXPECT_EQ(rounds[0].accepted, 2);
  EXPECT_EQ(rounds[0].refused, 1);
  EXPECT_EQ(rounds[0].bytes_up, 8000);
  EXPECT_EQ(rounds[0].num_examples, 250);
  EXPECT_EQ(rounds[0].checkpoint_path, "/ck/checkpoint.bin");
  h->OnEvent(Evaluated{1, 1, 0.75, 0.625, 200});
  RoundClosed closed = Closed(1, 2, 8000, 0.75, 0.625);
  closed.summary.refused = 1;
  closed.summary.dropped = 1;
  closed.summary.duration_s = 3.5;
  DpRoundReport dp;
  dp.epsilon = 1.25;
  closed.summary.dp = dp;
  h->OnEvent(closed);

  // Round 2: the first attempt fails, the second closes; a failed checkpoint is not a path.
  h->OnEvent(RoundOpened{2, 1, 3, 1});
  h->OnEvent(UpdateAccepted{2, "a", 100, 4000, std::nullopt});
  h->OnEvent(RoundFailed{2, 1, "too few updates"});
  h->OnEvent(RoundOpened{2, 2, 3, 1});
  h->OnEvent(UpdateAccepted{2, "b", 100, 5000, std::nullopt});
  h->OnEvent(UpdateAccepted{2, "c", 100, 5000, std::nullopt});
  h->OnEvent(CheckpointWritten{2, "/ck/checkpoint.bin", "IoError: disk full", 0.0});
  RoundClosed second = Closed(2, 2, 10000);
  second.summary.attempts = 2;
  h->OnEvent(second);
  h->OnEvent(FederatedEvaluated{FederatedEvalSummary{2, 2, 400, 0.5, 0.8}});
  RunFinished finished;
  finished.rounds_done = 2;
  finished.ok = true;
  finished.status = "OK";
  finished.final_model = "/ck/final.safetensors";
  h->OnEvent(finished);
  // A commit at RunStarted, and per round at RoundOpened, RoundFailed, CheckpointWritten and
  // RoundClosed, and at RunFinished: not one per event.
  EXPECT_EQ(h->commits(), 1 + 3 + 5 + 1);

  RunRecord run = *reader->GetRun(1);
  EXPECT_EQ(run.producer, "tributary-coordinator");
  EXPECT_EQ(run.config_json, R"({"run.rounds":3})");
  EXPECT_EQ(run.model, "cnn");
  EXPECT_EQ(run.strategy, "fedavg");
  EXPECT_EQ(run.status, "finished");
  EXPECT_EQ(ReportedStatus(run), "finished");
  EXPECT_EQ(run.error, "");
  EXPECT_EQ(run.rounds_total, 2);
  EXPECT_EQ(run.rounds_done, 2);
  EXPECT_EQ(run.final_model, "/ck/final.safetensors");
  EXPECT_EQ(run.checkpoint_dir, std::filesystem::weakly_canonical(dir.path("ck")).string());
  EXPECT_TRUE(std::filesystem::path(run.event_log).is_absolute()) << run.event_log;
  EXPECT_EQ(run.resumes, 0);
  EXPECT_EQ(run.pid, static_cast<int64_t>(::getpid()));
  ASSERT_TRUE(run.ended_at.has_value());
  EXPECT_GE(*run.ended_at, run.started_at);

  rounds = *reader->GetRounds(1);
  ASSERT_EQ(rounds.size(), 2u);
  const RoundRecord& r1 = rounds[0];
  EXPECT_EQ(r1.attempts, 1);
  EXPECT_EQ(r1.accepted, 2);
  EXPECT_EQ(r1.refused, 1);
  EXPECT_EQ(r1.dropped, 1);
  EXPECT_EQ(r1.bytes_up, 8000);
  EXPECT_EQ(r1.bytes_down, 16000);
  EXPECT_EQ(r1.num_examples, 200);
  EXPECT_DOUBLE_EQ(r1.duration_seconds, 3.5);
  EXPECT_EQ(r1.eval_loss, std::optional<double>(0.75));
  EXPECT_EQ(r1.eval_accuracy, std::optional<double>(0.625));
  EXPECT_EQ(r1.epsilon, std::optional<double>(1.25));
  EXPECT_EQ(r1.checkpoint_path, "/ck/checkpoint.bin");
  ASSERT_TRUE(r1.closed_at.has_value());
  EXPECT_GE(*r1.closed_at, r1.opened_at);
  const RoundRecord& r2 = rounds[1];
  EXPECT_EQ(r2.attempts, 2);
  EXPECT_EQ(r2.accepted, 2);
  EXPECT_EQ(r2.bytes_up, 10000);
  EXPECT_EQ(r2.checkpoint_path, "");
  EXPECT_FALSE(r2.eval_loss.has_value());
  EXPECT_FALSE(r2.epsilon.has_value());
  EXPECT_EQ(r2.federated_accuracy, std::optional<double>(0.8));

  // Every event, in order, as ToJson wrote it.
  std::vector<EventRecord> events = *reader->EventsAfter(1, 0, 0);
  ASSERT_EQ(events.size(), 18u);
  for (size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].seq, static_cast<int64_t>(i + 1));
  EXPECT_EQ(nlohmann::json::parse(events.front().json)["event"], "run_started");
  EXPECT_EQ(nlohmann::json::parse(events[2].json)["client"], "a");
  EXPECT_EQ(nlohmann::json::parse(events.back().json)["final_model"], "/ck/final.safetensors");
}

// Issue 27, item 11: a late update for round 1, refused while round 2 is open, is reported with
// its own round. It is in the events, and counts in neither round's row: round 1 is closed with its
// summary's numbers, and round 2's refusals are its own.
TEST(RunHistoryTest, ALateRefusalForAClosedRoundChangesNoRoundsRow) {
  TempDir dir;
  const std::string db_path = dir.path("history.db");
  std::unique_ptr<RunHistory> h = Writer(db_path, "");
  ASSERT_NE(h, nullptr);
  h->OnEvent(Started(2));
  PlayRound(*h, 1, 2, "");
  h->OnEvent(RoundOpened{2, 1, 2, 1});
  h->OnEvent(UpdateRefused{1, "slow", "late: round 1 is closed", "FailedPrecondition"});
  h->OnEvent(UpdateRefused{7, "eager", "round 7 has not started", "FailedPrecondition"});
  h->OnEvent(UpdateRefused{2, "bad", "update has 3 values, the model has 4", "InvalidArgument"});
  h->OnEvent(RoundFailed{2, 1, "deadline passed"});  // a commit
  std::unique_ptr<HistoryDb> reader = Reader(db_path);
  ASSERT_NE(reader, nullptr);
  std::vector<RoundRecord> rounds = *reader->GetRounds(1);
  ASSERT_EQ(rounds.size(), 2u);  // no row for round 7
  EXPECT_EQ(rounds[0].round, 1);
  EXPECT_EQ(rounds[0].refused, 0);
  EXPECT_EQ(rounds[1].round, 2);
  EXPECT_EQ(rounds[1].refused, 1);
  std::vector<EventRecord> events = *reader->EventsAfter(1, 0, 0);
  int late = 0;
  for (const EventRecord& e : events) {
    const nlohmann::json j = nlohmann::json::parse(e.json);
    if (j["event"] == "update_refused" && j["client"] == "slow") {
      ++late;
      EXPECT_EQ(j["round"], 1) << e.json;
    }
  }
  EXPECT_EQ(late, 1);
}

TEST(RunHistoryTest, ManyUpdatesAreCommittedInBatches) {
  TempDir dir;
  std::unique_ptr<RunHistory> h = Writer(dir.path("h.db"), "");
  ASSERT_NE(h, nullptr);
  h->OnEvent(Started(1));
  h->OnEvent(RoundOpened{1, 1, 1200, 0});
  EXPECT_EQ(h->commits(), 2);
  for (int i = 0; i < 1200; ++i) h->OnEvent(UpdateAccepted{1, "c", 1, 10, std::nullopt});
  // 1200 updates: a commit each time more than 500 wait.
  EXPECT_EQ(h->commits(), 4);
  h->OnEvent(Closed(1, 1200, 12000));
  EXPECT_EQ(h->commits(), 5);
  std::unique_ptr<HistoryDb> reader = Reader(dir.path("h.db"));
  EXPECT_EQ(reader->EventsAfter(1, 0, 0)->size(), 1203u);
  EXPECT_EQ(reader->GetRounds(1)->at(0).accepted, 1200);
  EXPECT_EQ(reader->GetRun(1)->rounds_done, 1);
}

TEST(RunHistoryTest, AResumedRunContinuesItsRecordAndRedoesTheRoundsAfterItsCheckpoint) {
  TempDir dir;
  const std::string db_path = dir.path("history.db");
  std::filesystem::create_directories(dir.path("ck"));
  int64_t last_seq = 0;
  {
    // The first process: rounds 1 and 2 close, round 3 is under way when it stops recording.
    std::unique_ptr<RunHistory> h = Writer(db_path, dir.path("ck"));
    h->OnEvent(Started(4));
    PlayRound(*h, 1, 2, dir.path("ck/checkpoint.bin"));
    PlayRound(*h, 2, 2, dir.path("ck/checkpoint.bin"));
    h->OnEvent(RoundOpened{3, 1, 2, 2});
    h->OnEvent(UpdateAccepted{3, "a", 100, 1000, std::nullopt});
    ASSERT_EQ(h->run_id(), 1);
    last_seq = 1 + 2 * 6 + 2;
  }
  {
    // Another run in another directory, between the two: not the one to continue.
    std::unique_ptr<RunHistory> other = Writer(db_path, dir.path("elsewhere"));
    other->OnEvent(Started(1));
    EXPECT_EQ(other->run_id(), 2);
  }
  std::unique_ptr<HistoryDb> reader = Reader(db_path);
  EXPECT_EQ(reader->GetRounds(1)->size(), 3u);
  // Its program ended without finishing the run (a crash would leave 'running', read as
  // interrupted: AWriterKilledInATransactionLeavesItsLastCommit).
  EXPECT_EQ(reader->GetRun(1)->status, "failed");
  EXPECT_EQ(reader->GetRun(1)->error, "the program ended before the run did");

  // The restart, resumed from round 2's checkpoint, names the directory another way.
  const std::string same_dir = dir.path("ck") + "/./";
  std::unique_ptr<RunHistory> h = Writer(db_path, same_dir);
  h->OnEvent(Started(4, 2, dir.path("ck/checkpoint.bin")));
  EXPECT_EQ(h->run_id(), 1);
  RunRecord run = *reader->GetRun(1);
  EXPECT_EQ(run.status, "running");
  EXPECT_EQ(run.resumes, 1);
  EXPECT_EQ(run.rounds_done, 2);
  // Round 3's stale row is gone; rounds 1 and 2 stay.
  std::vector<RoundRecord> rounds = *reader->GetRounds(1);
  ASSERT_EQ(rounds.size(), 2u);
  EXPECT_EQ(rounds[1].round, 2);
  // Its events go on from where the first process's stopped.
  std::vector<EventRecord> events = *reader->EventsAfter(1, last_seq, 0);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].seq, last_seq + 1);
  EXPECT_EQ(nlohmann::json::parse(events[0].json)["rounds_done"], 2);

  PlayRound(*h, 3, 3, dir.path("ck/checkpoint.bin"));
  PlayRound(*h, 4, 3, dir.path("ck/checkpoint.bin"));
  RunFinished finished;
  finished.rounds_done = 4;
  finished.ok = true;
  finished.final_model = dir.path("ck/final.safetensors");
  h->OnEvent(finished);
  run = *reader->GetRun(1);
  EXPECT_EQ(run.status, "finished");
  EXPECT_EQ(run.rounds_done, 4);
  EXPECT_EQ(run.resumes, 1);
  rounds = *reader->GetRounds(1);
  ASSERT_EQ(rounds.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(rounds[i].round, i + 1);
  EXPECT_EQ(rounds[2].accepted, 3);  // the resumed run's round 3, not the lost one's
  EXPECT_EQ(reader->ListRuns(0)->size(), 2u);

  // A new run in the same directory (not resumed) is a new record.
  std::unique_ptr<RunHistory> fresh = Writer(db_path, dir.path("ck"));
  fresh->OnEvent(Started(4));
  EXPECT_EQ(fresh->run_id(), 3);
  // A resumed run with no record (the history was off) gets one, counted as resumed.
  std::unique_ptr<RunHistory> orphan = Writer(db_path, dir.path("other-ck"));
  orphan->OnEvent(Started(4, 1, dir.path("other-ck/checkpoint.bin")));
  EXPECT_EQ(orphan->run_id(), 4);
  EXPECT_EQ(reader->GetRun(4)->resumes, 1);
  EXPECT_EQ(reader->GetRun(4)->rounds_done, 1);
}

// Issue 28: two runs that share one database and one checkpoint directory (even at once, their
// events interleaved) are two records, each with its own rounds; a resume continues the record of
// the run whose checkpoint it resumes (its run_uid), not the newest one in the directory.
TEST(RunHistoryTest, TwoRunsInOneDatabaseAndOneDirectoryStayTwoRecords) {
  TempDir dir;
  const std::string db_path = dir.path("history.db");
  const std::string ck = dir.path("ck");
  std::filesystem::create_directories(ck);
  const std::string uid_a(32, 'a'), uid_b(32, 'b');
  {
    std::unique_ptr<RunHistory> a = Writer(db_path, ck);
    std::unique_ptr<RunHistory> b = Writer(db_path, ck);
    RunStarted started_a = Started(4), started_b = Started(4);
    started_a.run_uid = uid_a;
    started_b.run_uid = uid_b;
    a->OnEvent(started_a);
    b->OnEvent(started_b);
    // Interleaved: A's rounds have 2 updates, B's 5.
    PlayRound(*a, 1, 2, ck + "/checkpoint.safetensors");
    PlayRound(*b, 1, 5, ck + "/checkpoint.safetensors");
    PlayRound(*a, 2, 2, ck + "/checkpoint.safetensors");
    PlayRound(*b, 2, 5, ck + "/checkpoint.safetensors");
    PlayRound(*b, 3, 5, ck + "/checkpoint.safetensors");
    ASSERT_EQ(a->run_id(), 1);
    ASSERT_EQ(b->run_id(), 2);
  }
  std::unique_ptr<HistoryDb> reader = Reader(db_path);
  ASSERT_EQ(reader->ListRuns(0)->size(), 2u);
  EXPECT_EQ(reader->GetRun(1)->run_uid, uid_a);
  EXPECT_EQ(reader->GetRun(2)->run_uid, uid_b);
  auto accepted = [&](int64_t run) {
    std::vector<int64_t> out;
    for (const RoundRecord& r : *reader->GetRounds(run)) out.push_back(r.accepted);
    return out;
  };
  EXPECT_EQ(accepted(1), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(accepted(2), (std::vector<int64_t>{5, 5, 5}));
  EXPECT_EQ(reader->GetRun(1)->rounds_done, 2);
  EXPECT_EQ(reader->GetRun(2)->rounds_done, 3);

  // A's checkpoint resumed: A's record, although B's is the newest in the directory.
  {
    std::unique_ptr<RunHistory> h = Writer(db_path, ck);
    RunStarted resumed = Started(4, 2, ck + "/checkpoint.safetensors");
    resumed.run_uid = uid_a;
    h->OnEvent(resumed);
    EXPECT_EQ(h->run_id(), 1);
    PlayRound(*h, 3, 2, ck + "/checkpoint.safetensors");
  }
  EXPECT_EQ(reader->GetRun(1)->resumes, 1);
  EXPECT_EQ(reader->GetRun(2)->resumes, 0);
  EXPECT_EQ(accepted(1), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(accepted(2), (std::vector<int64_t>{5, 5, 5}));
  // B's: B's record, its rounds after the checkpoint dropped.
  {
    std::unique_ptr<RunHistory> h = Writer(db_path, ck);
    RunStarted resumed = Started(4, 2, ck + "/checkpoint.safetensors");
    resumed.run_uid = uid_b;
    h->OnEvent(resumed);
    EXPECT_EQ(h->run_id(), 2);
  }
  EXPECT_EQ(reader->GetRun(2)->resumes, 1);
  EXPECT_EQ(accepted(2), (std::vector<int64_t>{5, 5}));
  // A checkpoint of an earlier version (no uid; the driver gave the run a new one) does not take
  // over a record that has one: a new record.
  {
    std::unique_ptr<RunHistory> h = Writer(db_path, ck);
    RunStarted resumed = Started(4, 1, ck + "/checkpoint.safetensors");
    resumed.run_uid = std::string(32, 'c');
    h->OnEvent(resumed);
    EXPECT_EQ(h->run_id(), 3);
  }
  EXPECT_EQ(reader->ListRuns(0)->size(), 3u);
  std::printf("records: 1 (%s) rounds %zu, 2 (%s) rounds %zu, 3 (%s)\n", uid_a.c_str(),
              accepted(1).size(), uid_b.c_str(), accepted(2).size(),
              reader->GetRun(3)->run_uid.c_str());
}

TEST(RunHistoryTest, CheckpointPathsFollowTheirFilesDownTheGenerations) {
  TempDir dir;
  const std::string ck = std::filesystem::weakly_canonical(dir.path("ck")).string();
  Result<std::unique_ptr<RunHistory>> opened =
      RunHistory::Open(dir.path("h.db"), {"tributary-coordinator", "{}", ck, "", 3});
  ASSERT_TRUE(opened.ok()) << opened.status();
  RunHistory& h = **opened;
  h.OnEvent(Started(5));
  // Rounds 1, 2, 4 and 5 write their checkpoint; round 3's write fails after the older files
  // moved down (as SaveCheckpoint moves them before it writes).
  for (uint64_t round = 1; round <= 5; ++round) {
    h.OnEvent(RoundOpened{round, 1, 1, round - 1});
    h.OnEvent(
        CheckpointWritten{round, CheckpointPath(ck), round == 3 ? "IoError: disk full" : "", 0.01});
    // A row this process keeps in memory, written again after its path moved.
    if (round == 4) h.OnEvent(FederatedEvaluated{FederatedEvalSummary{2, 1, 10, 0.5, 0.5}});
    h.OnEvent(Closed(round, 1, 10));
  }
  std::vector<RoundRecord> rounds = *Reader(dir.path("h.db"))->GetRounds(h.run_id());
  ASSERT_EQ(rounds.size(), 5u);
  // The files: round 1's went down to generation 2 at round 3, and round 2's took its place at
  // round 4, when generation 1 was empty; at round 5 nothing moved into generation 2.
  EXPECT_EQ(rounds[4].checkpoint_path, CheckpointPath(ck, 0));
  EXPECT_EQ(rounds[3].checkpoint_path, CheckpointPath(ck, 1));
  EXPECT_EQ(rounds[2].checkpoint_path, "");  // never written
  EXPECT_EQ(rounds[1].checkpoint_path, CheckpointPath(ck, 2));
  EXPECT_EQ(rounds[1].federated_accuracy, std::optional<double>(0.5));
  EXPECT_EQ(rounds[0].checkpoint_path, "");  // pushed past output.keep_checkpoints = 3
}

TEST(RunHistoryTest, HowARunEndsIsItsStatus) {
  TempDir dir;
  auto end_with = [&](RunFinished f, int64_t rounds) {
    std::unique_ptr<RunHistory> h = Writer(dir.path("h.db"), "");
    h->OnEvent(Started(rounds));
    h->OnEvent(f);
    return *Reader(dir.path("h.db"))->GetRun(h->run_id());
  };
  RunFinished failed;
  failed.rounds_done = 1;
  failed.ok = false;
  failed.status = "Unavailable: round 2 failed 3 times";
  RunRecord run = end_with(failed, 5);
  EXPECT_EQ(run.status, "failed");
  EXPECT_EQ(run.error, "Unavailable: round 2 failed 3 times");
  RunFinished stopped;
  stopped.rounds_done = 2;
  stopped.ok = true;
  run = end_with(stopped, 5);
  EXPECT_EQ(run.status, "stopped");
  RunFinished budget = stopped;
  budget.stopped = "the privacy budget (dp.target_epsilon = 2) is spent";
  run = end_with(budget, 5);
  EXPECT_EQ(run.status, "finished");
  EXPECT_EQ(run.error, budget.stopped);
}

TEST(RunHistoryTest, AFailingDatabaseTurnsTheHistoryOffButNotTheRun) {
  TempDir dir;
  testing::LogCapture log(LogLevel::kWarn);
  std::unique_ptr<RunHistory> h = Writer(dir.path("h.db"), "");
  h->OnEvent(Started(3));
  // Someone drops a table under the writer: its next commit fails.
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(dir.path("h.db").c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "DROP TABLE events", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
  for (uint64_t round = 1; round <= 3; ++round) PlayRound(*h, round, 2, "ck");
  EXPECT_FALSE(h->enabled());
  std::vector<std::string> lines = log.lines();
  ASSERT_EQ(lines.size(), 1u) << "one warning, not one per event";
  EXPECT_NE(lines[0].find("warn|history " + dir.path("h.db")), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("no such table"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("the run goes on"), std::string::npos) << lines[0];
}

TEST(RunHistoryTest, OpenForRunFailsOnlyForADatabaseTheUserNamed) {
  TempDir dir;
  const std::string not_a_db = dir.path("text.db");
  std::filesystem::create_directories(not_a_db);  // a directory: SQLite cannot open it
  Result<std::unique_ptr<RunHistory>> named = RunHistory::OpenForRun(not_a_db, {});
  ASSERT_FALSE(named.ok());
  EXPECT_NE(named.status().message().find("key 'output.history'"), std::string::npos)
      << named.status();
  EXPECT_NE(named.status().message().find(not_a_db), std::string::npos) << named.status();
  Result<std::unique_ptr<RunHistory>> none = RunHistory::OpenForRun("none", {});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);
  // The default place, unusable: a warning, and the run goes on without history.
  const char* old_state = std::getenv("XDG_STATE_HOME");
  const std::optional<std::string> saved_state =
      old_state ? std::optional<std::string>(old_state) : std::nullopt;
  ::setenv("XDG_STATE_HOME", dir.path("state-is-a-file").c_str(), 1);
  { std::ofstream(dir.path("state-is-a-file")) << "x"; }
  testing::LogCapture log(LogLevel::kWarn);
  Result<std::unique_ptr<RunHistory>> fallback = RunHistory::OpenForRun("", {});
  if (saved_state)
    ::setenv("XDG_STATE_HOME", saved_state->c_str(), 1);
  else
    ::unsetenv("XDG_STATE_HOME");
  ASSERT_TRUE(fallback.ok()) << fallback.status();
  EXPECT_EQ(*fallback, nullptr);
  ASSERT_EQ(log.lines().size(), 1u);
  EXPECT_NE(log.lines()[0].find("the run goes on without history"), std::string::npos)
      << log.lines()[0];
}

TEST(RunHistoryTest, AWriterKilledInATransactionLeavesItsLastCommit) {
  TempDir dir;
  const std::string db_path = dir.path("history.db");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  // Whatever fails below, the writer does not outlive the test.
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      if (pid > 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
  } reaper{child};
  if (child == 0) {
    // The writer: round 1 closes; round 2 opens; then it writes events in one transaction that
    // it never commits, telling the parent once it is well inside it.
    ::close(ready[0]);
    Result<std::unique_ptr<RunHistory>> h =
        RunHistory::Open(db_path, {"tributary-sim", "{}", "", ""});
    if (!h.ok()) ::_exit(3);
    (*h)->OnEvent(Started(5));
    PlayRound(**h, 1, 4, "/ck/checkpoint.bin");
    (*h)->OnEvent(RoundOpened{2, 1, 4, 1});
    Result<std::unique_ptr<HistoryDb>> db = HistoryDb::Open(db_path, HistoryDb::Mode::kReadWrite);
    if (!db.ok() || !(*db)->Begin().ok()) ::_exit(4);
    for (int64_t seq = 1000;; ++seq) {
      if (!(*db)->AppendEvent({1, seq, 0.0, std::string(200, 'x')}).ok()) ::_exit(5);
      RoundRecord r;
      r.run_id = 1;
      r.round = 2;
      r.accepted = seq;
      if (!(*db)->PutRound(r).ok()) ::_exit(6);
      if (seq == 3000 && ::write(ready[1], "x", 1) != 1) ::_exit(7);
    }
  }
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1) << "the writer did not get going";
  ::close(ready[0]);
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  reaper.pid = -1;
  ASSERT_TRUE(WIFSIGNALED(wstatus)) << "the writer exited by itself: " << WEXITSTATUS(wstatus);

  std::unique_ptr<HistoryDb> reader = Reader(db_path);
  ASSERT_NE(reader, nullptr);
  RunRecord run = *reader->GetRun(1);
  EXPECT_EQ(run.status, "running");
  EXPECT_EQ(run.pid, child);
  EXPECT_EQ(ReportedStatus(run), "interrupted");
  EXPECT_EQ(run.rounds_done, 1);
  std::vector<RoundRecord> rounds = *reader->GetRounds(1);
  ASSERT_EQ(rounds.size(), 2u);
  EXPECT_EQ(rounds[0].accepted, 4);
  EXPECT_EQ(rounds[0].checkpoint_path, "/ck/checkpoint.bin");
  EXPECT_EQ(rounds[1].accepted, 0) << "the uncommitted writes are not there";
  EXPECT_FALSE(rounds[1].closed_at.has_value());
  // run_started, round 1 (opened, 4 updates, checkpoint, evaluated, closed), round 2 opened.
  EXPECT_EQ(*reader->LastEventSeq(1), 1 + 8 + 1);
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open_v2(db_path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(raw, "PRAGMA integrity_check", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "ok");
  sqlite3_finalize(st);
  sqlite3_close(raw);

  // And a writer can go on with it.
  std::unique_ptr<RunHistory> next = Writer(db_path, "");
  next->OnEvent(Started(1));
  EXPECT_EQ(next->run_id(), 2);
}

TEST(RunHistoryTest, ReadersReadWhileARunWrites) {
  TempDir dir;
  const std::string db_path = dir.path("history.db");
  std::unique_ptr<RunHistory> h = Writer(db_path, "");
  h->OnEvent(Started(150));
  std::atomic<bool> done{false}, failed{false};
  std::atomic<int> reads{0};
  std::string failure;  // written by the reader before it sets `failed`, read after join()
  std::thread reader([&] {
    std::unique_ptr<HistoryDb> db = Reader(db_path);
    if (db == nullptr) {
      failure = "cannot open the database";
      failed = true;
      return;
    }
    while (!done.load()) {
      // One snapshot: the rounds closed are the run's rounds_done, at most one more is open, and
      // the events have no gap.
      Status s = db->BeginRead();
      Result<RunRecord> run = db->GetRun(1);
      Result<std::vector<RoundRecord>> rounds = db->GetRounds(1);
      Result<std::vector<EventRecord>> events = db->EventsAfter(1, 0, 0);
      db->Rollback();
      if (!s.ok() || !run.ok() || !rounds.ok() || !events.ok()) {
        failure = "read failed: " + s.ToString() + " " + run.status().ToString() + " " +
                  rounds.status().ToString() + " " + events.status().ToString();
        failed = true;
        return;
      }
      int64_t closed = 0, open = 0;
      for (const RoundRecord& r : *rounds) (r.closed_at ? closed : open) += 1;
      if (closed != run->rounds_done || open > 1) {
        failure = "inconsistent: " + std::to_string(closed) + " closed, " + std::to_string(open) +
                  " open, rounds_done " + std::to_string(run->rounds_done);
        failed = true;
        return;
      }
      for (size_t i = 0; i < events->size(); ++i) {
        if ((*events)[i].seq != static_cast<int64_t>(i + 1)) {
          failure = "a gap in the events at " + std::to_string(i + 1);
          failed = true;
          return;
        }
      }
      reads.fetch_add(1);
    }
  });
  for (uint64_t round = 1; round <= 150; ++round) PlayRound(*h, round, 5, "ck");
  RunFinished finished;
  finished.rounds_done = 150;
  finished.ok = true;
  h->OnEvent(finished);
  // Let the reader see the end too.
  const int before = reads.load();
  while (reads.load() < before + 2 && !failed.load()) std::this_thread::yield();
  done = true;
  reader.join();
  EXPECT_EQ(failure, "");
  EXPECT_GT(reads.load(), 2);
  EXPECT_TRUE(h->enabled());
  EXPECT_EQ(Reader(db_path)->GetRounds(1)->size(), 150u);
}

}  // namespace
}  // namespace tributary
