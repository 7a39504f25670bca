// HistoryDb (history/history_db.h): the schema it makes, the records it keeps, the errors it gives
// for files it cannot use, and how readers report a run whose writer is gone; ResolveHistoryPath.
#include "history/history_db.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "history/history_path.h"
#include "history/process_identity.h"
#include "tests/history/temp_dir.h"

namespace tributary {
namespace {

using testing::TempDir;

// Runs `sql` on `path` through SQLite directly; the first column of its last row as text.
std::string RawQuery(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string out;
  if (sqlite3_open(path.c_str(), &db) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK) {
      while (sqlite3_step(st) == SQLITE_ROW) {
        const unsigned char* text = sqlite3_column_text(st, 0);
        out = text ? reinterpret_cast<const char*>(text) : "";
      }
    } else {
      out = std::string("error: ") + sqlite3_errmsg(db);
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return out;
}

RunRecord SomeRun() {
  RunRecord r;
  r.producer = "tributary-coordinator";
  r.config_json = R"({"run.model":"cnn"})";
  r.model = "cnn";
  r.strategy = "fedavg";
  r.rounds_total = 5;
  r.status = "running";
  r.started_at = 1000.5;
  r.updated_at = 1000.5;
  r.checkpoint_dir = "/runs/a";
  const ProcessIdentity self = ThisProcess();
  r.host = self.host;
  r.pid = self.pid;
  r.pid_started = self.start_ticks;
  return r;
}

TEST(HistoryDbTest, CreatesItsSchemaInWalModeAndItsDirectory) {
  TempDir dir;
  const std::string path = dir.path("state/tributary/history.db");
  {
    Result<std::unique_ptr<HistoryDb>> db = HistoryDb::Open(path, HistoryDb::Mode::kReadWrite);
    ASSERT_TRUE(db.ok()) << db.status();
    EXPECT_EQ((*db)->path(), path);
  }
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), "2");
  EXPECT_EQ(RawQuery(path, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(RawQuery(path,
                     "SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_master WHERE "
                     "type = 'table' ORDER BY name)"),
            "events,rounds,runs");
  // Opening it again, to write or to read, keeps it as it is.
  ASSERT_TRUE(HistoryDb::Open(path, HistoryDb::Mode::kReadWrite).ok());
  Result<std::unique_ptr<HistoryDb>> reader = HistoryDb::Open(path, HistoryDb::Mode::kReadOnly);
  ASSERT_TRUE(reader.ok()) << reader.status();
  Result<std::vector<RunRecord>> runs = (*reader)->ListRuns(0);
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_TRUE(runs->empty());
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), "2");
}

TEST(HistoryDbTest, ReadingNeverCreatesADatabase) {
  TempDir dir;
  const std::string path = dir.path("missing.db");
  Result<std::unique_ptr<HistoryDb>> db = HistoryDb::Open(path, HistoryDb::Mode::kReadOnly);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kNotFound);
  EXPECT_NE(db.status().message().find(path), std::string::npos) << db.status();
  EXPECT_NE(db.status().message().find("output.history"), std::string::npos) << db.status();
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(HistoryDbTest, ADatabaseOfANewerSchemaIsRefusedByName) {
  TempDir dir;
  const std::string path = dir.path("history.db");
  ASSERT_TRUE(HistoryDb::Open(path, HistoryDb::Mode::kReadWrite).ok());
  RawQuery(path, "PRAGMA user_version = 7");
  for (HistoryDb::Mode mode : {HistoryDb::Mode::kReadOnly, HistoryDb::Mode::kReadWrite}) {
    Result<std::unique_ptr<HistoryDb>> db = HistoryDb::Open(path, mode);
    ASSERT_FALSE(db.ok());
    EXPECT_EQ(db.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(db.status().message().find("schema version 7, newer than this build's 2"),
              std::string::npos)
        << db.status();
    EXPECT_NE(db.status().message().find(path), std::string::npos) << db.status();
  }
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), "7");
}

// A database of schema version 1 (before run_uid): read as it is, migrated when opened to write,
// its runs kept (with run_uid '').
TEST(HistoryDbTest, AVersion1DatabaseIsReadAndMigrated) {
  TempDir dir;
  const std::string path = dir.path("history.db");
  {
    Result<std::unique_ptr<HistoryDb>> db = HistoryDb::Open(path, HistoryDb::Mode::kReadWrite);
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE((*db)->InsertRun(SomeRun()).ok());
  }
  // Back to version 1's schema.
  EXPECT_EQ(RawQuery(path, "DROP INDEX runs_by_uid"), "");
  EXPECT_EQ(RawQuery(path, "ALTER TABLE runs DROP COLUMN run_uid"), "");
  RawQuery(path, "PRAGMA user_version = 1");
  {
    Result<std::unique_ptr<HistoryDb>> reader = HistoryDb::Open(path, HistoryDb::Mode::kReadOnly);
    ASSERT_TRUE(reader.ok()) << reader.status();
    Result<std::vector<RunRecord>> runs = (*reader)->ListRuns(0);
    ASSERT_TRUE(runs.ok()) << runs.status();
    ASSERT_EQ(runs->size(), 1u);
    EXPECT_EQ((*runs)[0].checkpoint_dir, "/runs/a");
    EXPECT_EQ((*runs)[0].run_uid, "");
  }
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), "1");  // reading changed nothing
  Result<std::unique_ptr<HistoryDb>> writer = HistoryDb::Open(path, HistoryDb::Mode::kReadWrite);
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), "2");
  RunRecord next = SomeRun();
  next.run_uid = std::string(32, 'f');
  Result<int64_t> id = (*writer)->InsertRun(next);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, 2);
  EXPECT_EQ((*writer)->GetRun(1)->run_uid, "");
  Result<std::optional<RunRecord>> found = (*writer)->RunByUid(next.run_uid);
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((**found).id, 2);
  EXPECT_FALSE((*writer)->RunByUid(std::string(32, 'e'))->has_value());
}

TEST(HistoryDbTest, AFileThatIsNotADatabaseIsCorruption) {
  TempDir dir;
  const std::string path = dir.path("history.db");
  {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 200; ++i) out << "this is not a SQLite database, just text. ";
  }
  for (HistoryDb::Mode mode : {HistoryDb::Mode::kReadOnly, HistoryDb::Mode::kReadWrite}) {
    Result<std::unique_ptr<HistoryDb>> db = HistoryDb::Open(path, mode);
    ASSERT_FALSE(db.ok());
    EXPECT_EQ(db.status().code(), StatusCode::kCorruption) << db.status();
    EXPECT_NE(db.status().message().find(path), std::string::npos) << db.status();
  }
}

TEST(HistoryDbTest, AnotherProgramsDatabaseIsLeftAlone) {
  TempDir dir;
  const std::string path = dir.path("other.db");
  RawQuery(path, "CREATE TABLE notes (text TEXT)");
  Result<std::unique_ptr<HistoryDb>> db = HistoryDb::Open(path, HistoryDb::Mode::kReadWrite);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(db.status().message().find("not a Tributary run history"), std::string::npos)
      << db.status();
  EXPECT_EQ(RawQuery(path, "SELECT count(*) FROM sqlite_master"), "1");
  EXPECT_EQ(RawQuery(path, "PRAGMA journal_mode"), "delete");
}

TEST(HistoryDbTest, RecordsReadBackAsWritten) {
  TempDir dir;
  Result<std::unique_ptr<HistoryDb>> opened =
      HistoryDb::Open(dir.path("h.db"), HistoryDb::Mode::kReadWrite);
  ASSERT_TRUE(opened.ok()) << opened.status();
  HistoryDb& db = **opened;
  Result<int64_t> a = db.InsertRun(SomeRun());
  RunRecord second = SomeRun();
  second.checkpoint_dir = "/runs/b";
  Result<int64_t> b = db.InsertRun(second);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*b, *a + 1);

  RunRecord run = SomeRun();
  run.id = *a;
  run.rounds_done = 2;
  run.status = "finished";
  run.ended_at = 2000.25;
  run.final_model = "/runs/a/final.safetensors";
  run.resumes = 1;
  ASSERT_TRUE(db.UpdateRun(run).ok());
  RoundRecord round;
  round.run_id = *a;
  round.round = 1;
  round.attempts = 2;
  round.opened_at = 1001;
  round.closed_at = 1003.5;
  round.accepted = 3;
  round.bytes_up = int64_t{5} << 33;  // past 32 bits
  round.eval_accuracy = 0.75;
  round.checkpoint_path = "/runs/a/checkpoint.bin";
  ASSERT_TRUE(db.PutRound(round).ok());
  round.round = 2;
  round.closed_at.reset();
  ASSERT_TRUE(db.PutRound(round).ok());
  for (int64_t seq = 1; seq <= 3; ++seq)
    ASSERT_TRUE(db.AppendEvent({*a, seq, 1000.0 + seq, "{\"event\":\"x\"}"}).ok());

  Result<RunRecord> got = db.GetRun(*a);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->status, "finished");
  EXPECT_EQ(got->rounds_done, 2);
  EXPECT_EQ(got->ended_at, std::optional<double>(2000.25));
  EXPECT_EQ(got->final_model, "/runs/a/final.safetensors");
  EXPECT_EQ(got->config_json, R"({"run.model":"cnn"})");
  EXPECT_EQ(got->resumes, 1);
  Result<std::vector<RoundRecord>> rounds = db.GetRounds(*a);
  ASSERT_TRUE(rounds.ok());
  ASSERT_EQ(rounds->size(), 2u);
  EXPECT_EQ((*rounds)[0].bytes_up, int64_t{5} << 33);
  EXPECT_EQ((*rounds)[0].closed_at, std::optional<double>(1003.5));
  EXPECT_EQ((*rounds)[0].eval_accuracy, std::optional<double>(0.75));
  EXPECT_FALSE((*rounds)[0].eval_loss.has_value());
  EXPECT_FALSE((*rounds)[1].closed_at.has_value());
  ASSERT_TRUE(db.DeleteRoundsAfter(*a, 1).ok());
  EXPECT_EQ(db.GetRounds(*a)->size(), 1u);

  EXPECT_EQ(*db.LastEventSeq(*a), 3);
  EXPECT_EQ(*db.LastEventSeq(*b), 0);
  Result<std::vector<EventRecord>> events = db.EventsAfter(*a, 1, 10);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[0].seq, 2);
  EXPECT_EQ((*events)[1].at, 1003.0);

  Result<std::optional<RunRecord>> newest = db.NewestRunIn("/runs/b");
  ASSERT_TRUE(newest.ok() && newest->has_value());
  EXPECT_EQ((*newest)->id, *b);
  EXPECT_FALSE(db.NewestRunIn("/runs/c")->has_value());
  EXPECT_EQ(db.ListRuns(0)->size(), 2u);
  EXPECT_EQ(db.ListRuns(1)->front().id, *b);  // newest first

  Result<RunRecord> missing = db.GetRun(99);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no run 99"), std::string::npos) << missing.status();
  RunRecord ghost = SomeRun();
  ghost.id = 99;
  EXPECT_EQ(db.UpdateRun(ghost).code(), StatusCode::kNotFound);
  // The schema's checks hold: a status the readers do not know is refused.
  run.status = "interrupted";
  EXPECT_FALSE(db.UpdateRun(run).ok());
}

TEST(HistoryDbTest, ARunningRunWhoseProcessIsGoneIsReportedInterrupted) {
  RunRecord run = SomeRun();
  EXPECT_EQ(ReportedStatus(run), "running");  // this process
  // A child that has exited and been reaped.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  run.pid = child;
  EXPECT_EQ(ReportedStatus(run), "interrupted");
  // This pid, but a start time that is not this process's: the pid was reused.
  run.pid = ThisProcess().pid;
  run.pid_started = ThisProcess().start_ticks + 12345;
  if (ThisProcess().start_ticks != 0) {
    EXPECT_EQ(ReportedStatus(run), "interrupted");
  }
  // Another host: nothing to tell from here.
  run.pid = child;
  run.host = "another-host.example";
  EXPECT_EQ(ReportedStatus(run), "running");
  // Only 'running' is ever reported otherwise.
  run.host = ThisProcess().host;
  run.status = "finished";
  EXPECT_EQ(ReportedStatus(run), "finished");
}

// Sets an environment variable for the scope, restoring the old value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(HistoryPathTest, TheDefaultFollowsTheXdgStateDirectory) {
  EXPECT_EQ(ResolveHistoryPath("none"), "");
  EXPECT_EQ(ResolveHistoryPath("/data/h.db"), "/data/h.db");
  EXPECT_EQ(ResolveHistoryPath("rel/h.db"), "rel/h.db");
  {
    ScopedEnv state("XDG_STATE_HOME", "/var/state");
    EXPECT_EQ(ResolveHistoryPath(""), "/var/state/tributary/history.db");
  }
  {
    ScopedEnv state("XDG_STATE_HOME", "relative/state");  // the spec says: ignore it
    ScopedEnv home("HOME", "/home/ada");
    EXPECT_EQ(ResolveHistoryPath(""), "/home/ada/.local/state/tributary/history.db");
  }
  {
    ScopedEnv state("XDG_STATE_HOME", nullptr);
    ScopedEnv home("HOME", "/home/bob");
    EXPECT_EQ(ResolveHistoryPath(""), "/home/bob/.local/state/tributary/history.db");
  }
}

}  // namespace
}  // namespace tributary
