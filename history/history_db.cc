#include "history/history_db.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <filesystem>
#include <system_error>

#include "history/process_identity.h"
#include "history/sqlite_statement.h"

namespace tributary {
namespace {

// Version 2. A later version adds its changes as a migration from the one before, in one
// transaction, and raises user_version.
constexpr const char* kSchema = R"sql(
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  producer TEXT NOT NULL,
  config_json TEXT NOT NULL DEFAULT '{}',
  model TEXT NOT NULL DEFAULT '',
  strategy TEXT NOT NULL DEFAULT '',
  rounds_total INTEGER NOT NULL DEFAULT 0,
  rounds_done INTEGER NOT NULL DEFAULT 0,
  status TEXT NOT NULL CHECK (status IN ('running', 'finished', 'failed', 'stopped')),
  error TEXT NOT NULL DEFAULT '',
  started_at REAL NOT NULL,
  ended_at REAL,
  updated_at REAL NOT NULL,
  host TEXT NOT NULL DEFAULT '',
  pid INTEGER NOT NULL DEFAULT 0,
  pid_started INTEGER NOT NULL DEFAULT 0,
  checkpoint_dir TEXT NOT NULL DEFAULT '',
  event_log TEXT NOT NULL DEFAULT '',
  final_model TEXT NOT NULL DEFAULT '',
  resumes INTEGER NOT NULL DEFAULT 0,
  run_uid TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runs_by_checkpoint_dir ON runs (checkpoint_dir, id);
CREATE INDEX runs_by_uid ON runs (run_uid);
CREATE TABLE rounds (
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  round INTEGER NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  selected INTEGER NOT NULL DEFAULT 0,
  opened_at REAL NOT NULL,
  closed_at REAL,
  duration_seconds REAL NOT NULL DEFAULT 0,
  accepted INTEGER NOT NULL DEFAULT 0,
  refused INTEGER NOT NULL DEFAULT 0,
  dropped INTEGER NOT NULL DEFAULT 0,
  bytes_up INTEGER NOT NULL DEFAULT 0,
  bytes_down INTEGER NOT NULL DEFAULT 0,
  num_examples INTEGER NOT NULL DEFAULT 0,
  eval_loss REAL,
  eval_accuracy REAL,
  federated_loss REAL,
  federated_accuracy REAL,
  epsilon REAL,
  checkpoint_path TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (run_id, round)
) WITHOUT ROWID;
CREATE TABLE events (
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  at REAL NOT NULL,
  json TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
PRAGMA user_version = 2;
)sql";

// Version 1 to 2: each run's unique id (RunRecord::run_uid); runs recorded before have none.
constexpr const char* kMigrateFrom1 = R"sql(
ALTER TABLE runs ADD COLUMN run_uid TEXT NOT NULL DEFAULT '';
CREATE INDEX runs_by_uid ON runs (run_uid);
PRAGMA user_version = 2;
)sql";

constexpr const char* kRunColumns =
    "id, producer, config_json, model, strategy, rounds_total, rounds_done, status, error, "
    "started_at, ended_at, updated_at, host, pid, pid_started, checkpoint_dir, event_log, "
    "final_model, resumes, run_uid";
// What readers select from a version-1 database opened read-only (not migrated): no run_uid.
constexpr const char* kRunColumnsV1 =
    "id, producer, config_json, model, strategy, rounds_total, rounds_done, status, error, "
    "started_at, ended_at, updated_at, host, pid, pid_started, checkpoint_dir, event_log, "
    "final_model, resumes, '' AS run_uid";

constexpr const char* kRoundColumns =
    "run_id, round, attempts, selected, opened_at, closed_at, duration_seconds, accepted, refused, "
    "dropped, bytes_up, bytes_down, num_examples, eval_loss, eval_accuracy, federated_loss, "
    "federated_accuracy, epsilon, checkpoint_path";

RunRecord RunFromRow(const SqliteStatement& st) {
  RunRecord r;
  r.id = st.Int(0);
  r.producer = st.Text(1);
  r.config_json = st.Text(2);
  r.model = st.Text(3);
  r.strategy = st.Text(4);
  r.rounds_total = st.Int(5);
  r.rounds_done = st.Int(6);
  r.status = st.Text(7);
  r.error = st.Text(8);
  r.started_at = st.Real(9);
  r.ended_at = st.OptionalReal(10);
  r.updated_at = st.Real(11);
  r.host = st.Text(12);
  r.pid = st.Int(13);
  r.pid_started = st.Int(14);
  r.checkpoint_dir = st.Text(15);
  r.event_log = st.Text(16);
  r.final_model = st.Text(17);
  r.resumes = st.Int(18);
  r.run_uid = st.Text(19);
  return r;
}

// Binds every field but the id to ?2 .. ?20 (kRunColumns' order).
void BindRun(SqliteStatement& st, const RunRecord& r) {
  st.Bind(2, r.producer)
      .Bind(3, r.config_json)
      .Bind(4, r.model)
      .Bind(5, r.strategy)
      .Bind(6, r.rounds_total)
      .Bind(7, r.rounds_done)
      .Bind(8, r.status)
      .Bind(9, r.error)
      .Bind(10, r.started_at)
      .Bind(11, r.ended_at)
      .Bind(12, r.updated_at)
      .Bind(13, r.host)
      .Bind(14, r.pid)
      .Bind(15, r.pid_started)
      .Bind(16, r.checkpoint_dir)
      .Bind(17, r.event_log)
      .Bind(18, r.final_model)
      .Bind(19, r.resumes)
      .Bind(20, r.run_uid);
}

RoundRecord RoundFromRow(const SqliteStatement& st) {
  RoundRecord r;
  r.run_id = st.Int(0);
  r.round = st.Int(1);
  r.attempts = st.Int(2);
  r.selected = st.Int(3);
  r.opened_at = st.Real(4);
  r.closed_at = st.OptionalReal(5);
  r.duration_seconds = st.Real(6);
  r.accepted = st.Int(7);
  r.refused = st.Int(8);
  r.dropped = st.Int(9);
  r.bytes_up = st.Int(10);
  r.bytes_down = st.Int(11);
  r.num_examples = st.Int(12);
  r.eval_loss = st.OptionalReal(13);
  r.eval_accuracy = st.OptionalReal(14);
  r.federated_loss = st.OptionalReal(15);
  r.federated_accuracy = st.OptionalReal(16);
  r.epsilon = st.OptionalReal(17);
  r.checkpoint_path = st.Text(18);
  return r;
}

}  // namespace

std::string ReportedStatus(const RunRecord& run) {
  if (run.status == "running" &&
      !ProcessMayBeRunning(ProcessIdentity{run.host, run.pid, run.pid_started}))
    return "interrupted";
  return run.status;
}

Result<std::unique_ptr<HistoryDb>> HistoryDb::Open(const std::string& path, Mode mode) {
  std::unique_ptr<HistoryDb> db(new HistoryDb());
  db->path_ = path;
  namespace fs = std::filesystem;
  std::error_code ec;
  int flags = SQLITE_OPEN_NOMUTEX;
  if (mode == Mode::kReadOnly) {
    if (!fs::exists(path, ec))
      return Status::NotFound("there is no run history at " + path +
                              " (tributary-coordinator and tributary-sim write it there: key "
                              "'output.history')");
    flags |= SQLITE_OPEN_READONLY;
  } else {
    const fs::path dir = fs::path(path).parent_path();
    if (!dir.empty() && !fs::create_directories(dir, ec) && ec)
      return Status::IoError(
          fmt::format("history database {}: creating {}: {}", path, dir.string(), ec.message()));
    flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  }
  const int rc = sqlite3_open_v2(path.c_str(), &db->db_, flags, nullptr);
  if (rc != SQLITE_OK) return db->Error(rc, "opening it");
  sqlite3_extended_result_codes(db->db_, 1);
  sqlite3_busy_timeout(db->db_, kBusyTimeoutMs);
  // Checked before anything is written: a file of another program or version stays as it is.
  TRIB_ASSIGN_OR_RETURN(const int64_t version, db->CheckSchema(mode));
  db->columns_ = version == 1 ? kRunColumnsV1 : kRunColumns;
  if (mode == Mode::kReadWrite) {
    // journal_mode answers with the mode it is in: anything but "wal" means it could not switch.
    // (The statement is finalized at the end of this block, before anything else is run.)
    TRIB_ASSIGN_OR_RETURN(
        SqliteStatement wal,
        SqliteStatement::Prepare(db->db_, "PRAGMA journal_mode = WAL",
                                 "history database " + path + ": setting the WAL journal"));
    TRIB_ASSIGN_OR_RETURN(bool row, wal.Step());
    if (!row || wal.Text(0) != "wal")
      return Status::IoError(fmt::format(
          "history database {}: cannot use a WAL journal (journal_mode is '{}'); is it on a "
          "network file system?",
          path, row ? wal.Text(0) : std::string()));
  }
  if (mode == Mode::kReadWrite)
    TRIB_RETURN_IF_ERROR(db->Exec("PRAGMA synchronous = NORMAL", "setting synchronous"));
  TRIB_RETURN_IF_ERROR(db->Exec("PRAGMA foreign_keys = ON", "enabling foreign keys"));
  if (mode == Mode::kReadWrite && version < kSchemaVersion) {
    TRIB_RETURN_IF_ERROR(db->CreateSchema());
    db->columns_ = kRunColumns;
  }
  return db;
}

HistoryDb::~HistoryDb() { sqlite3_close_v2(db_); }

Status HistoryDb::Error(int rc, const std::string& what) const {
  return SqliteError(rc, db_, "history database " + path_ + ": " + what);
}

Status HistoryDb::Exec(const char* sql, const char* what) {
  char* message = nullptr;
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &message);
  sqlite3_free(message);  // the connection's errmsg says the same
  return rc == SQLITE_OK ? Status::Ok() : Error(rc, what);
}

Result<int64_t> HistoryDb::CheckSchema(Mode mode) {
  TRIB_ASSIGN_OR_RETURN(
      SqliteStatement st,
      SqliteStatement::Prepare(db_,
                               "SELECT (SELECT user_version FROM pragma_user_version), (SELECT "
                               "count(*) FROM sqlite_master WHERE type = 'table')",
                               "history database " + path_ + ": reading it"));
  TRIB_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return Status::Internal("history database " + path_ + ": no schema row");
  const int64_t version = st.Int(0), tables = st.Int(1);
  if (version > kSchemaVersion)
    return Status::FailedPrecondition(
        fmt::format("history database {} has schema version {}, newer than this build's {}: it "
                    "was written by a newer Tributary; use that one (or another output.history)",
                    path_, version, kSchemaVersion));
  if (version == 0 && tables > 0)
    return Status::FailedPrecondition(
        fmt::format("{} is a SQLite database, but not a Tributary run history (it has {} tables "
                    "and no schema version); name another file in output.history",
                    path_, tables));
  if (version == 0 && mode == Mode::kReadOnly)
    return Status::FailedPrecondition("history database " + path_ +
                                      " is empty: no run has been recorded in it yet");
  return version;
}

Status HistoryDb::CreateSchema() {
  // In a write transaction, checking again: another writer may have made it meanwhile.
  TRIB_RETURN_IF_ERROR(Begin());
  Result<int64_t> version = CheckSchema(Mode::kReadWrite);
  Status status = version.status();
  if (status.ok() && *version == 0) status = Exec(kSchema, "creating the schema");
  if (status.ok() && *version == 1)
    status = Exec(kMigrateFrom1, "adding run_uid (schema version 1 to 2)");
  if (status.ok()) status = Commit();
  if (!status.ok()) Rollback();
  return status;
}

Status HistoryDb::Begin() { return Exec("BEGIN IMMEDIATE", "beginning a transaction"); }

Status HistoryDb::BeginRead() { return Exec("BEGIN DEFERRED", "beginning a read transaction"); }

Status HistoryDb::Commit() { return Exec("COMMIT", "committing"); }

void HistoryDb::Rollback() {
  // Fails only when no transaction is open (SQLite may have rolled it back itself).
  sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

Result<int64_t> HistoryDb::InsertRun(const RunRecord& run) {
  TRIB_ASSIGN_OR_RETURN(
      SqliteStatement st,
      SqliteStatement::Prepare(
          db_,
          fmt::format("INSERT INTO runs ({}) VALUES (NULL, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
                      "?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)",
                      kRunColumns),
          "history database " + path_ + ": recording a new run"));
  BindRun(st, run);
  TRIB_RETURN_IF_ERROR(st.Run());
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db_));
}

Status HistoryDb::UpdateRun(const RunRecord& run) {
  const std::string what = fmt::format("history database {}: updating run {}", path_, run.id);
  TRIB_ASSIGN_OR_RETURN(
      SqliteStatement st,
      SqliteStatement::Prepare(
          db_,
          "UPDATE runs SET producer = ?2, config_json = ?3, model = ?4, strategy = ?5, "
          "rounds_total = ?6, rounds_done = ?7, status = ?8, error = ?9, started_at = ?10, "
          "ended_at = ?11, updated_at = ?12, host = ?13, pid = ?14, pid_started = ?15, "
          "checkpoint_dir = ?16, event_log = ?17, final_model = ?18, resumes = ?19, run_uid = ?20 "
          "WHERE id = ?1",
          what));
  st.Bind(1, run.id);
  BindRun(st, run);
  TRIB_RETURN_IF_ERROR(st.Run());
  if (sqlite3_changes(db_) != 1) return Status::NotFound(what + ": there is no such run");
  return Status::Ok();
}

Status HistoryDb::PutRound(const RoundRecord& r) {
  TRIB_ASSIGN_OR_RETURN(
      SqliteStatement st,
      SqliteStatement::Prepare(
          db_,
          fmt::format("INSERT OR REPLACE INTO rounds ({}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
                      "?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
                      kRoundColumns),
          fmt::format("history database {}: recording round {} of run {}", path_, r.round,
                      r.run_id)));
  st.Bind(1, r.run_id)
      .Bind(2, r.round)
      .Bind(3, r.attempts)
      .Bind(4, r.selected)
      .Bind(5, r.opened_at)
      .Bind(6, r.closed_at)
      .Bind(7, r.duration_seconds)
      .Bind(8, r.accepted)
      .Bind(9, r.refused)
      .Bind(10, r.dropped)
      .Bind(11, r.bytes_up)
      .Bind(12, r.bytes_down)
      .Bind(13, r.num_examples)
      .Bind(14, r.eval_loss)
      .Bind(15, r.eval_accuracy)
      .Bind(16, r.federated_loss)
      .Bind(17, r.federated_accuracy)
      .Bind(18, r.epsilon)
      .Bind(19, r.checkpoint_path);
  return st.Run();
}

Status HistoryDb::DeleteRoundsAfter(int64_t run_id, int64_t round) {
  TRIB_ASSIGN_OR_RETURN(
      SqliteStatement st,
      SqliteStatement::Prepare(db_, "DELETE FROM rounds WHERE run_id = ?1 AND round > ?2",
                               fmt::format("history database {}: dropping the rounds of run {} "
                                           "after round {}",
                                           path_, run_id, round)));
  st.Bind(1, run_id).Bind(2, round);
  return st.Run();
}

Status HistoryDb::SetCheckpointPath(int64_t run_id, int64_t round, const std::string& path) {
  TRIB_ASSIGN_OR_RETURN(
      SqliteStatement st,
      SqliteStatement::Prepare(
          db_, "UPDATE rounds SET checkpoint_path = ?3 WHERE run_id = ?1 AND round = ?2",
          fmt::format("history database {}: moving the checkpoint path of round {} of run {}",
                      path_, round, run_id)));
  st.Bind(1, run_id).Bind(2, round).Bind(3, path);
  return st.Run();
}

Status HistoryDb::AppendEvent(const EventRecord& e) {
  TRIB_ASSIGN_OR_RETURN(
      SqliteStatement st,
      SqliteStatement::Prepare(db_,
                               "INSERT INTO events (run_id, seq, at, json) VALUES (?1, ?2, ?3, ?4)",
                               fmt::format("history database {}: recording event {} of run {}",
                                           path_, e.seq, e.run_id)));
  st.Bind(1, e.run_id).Bind(2, e.seq).Bind(3, e.at).Bind(4, e.json);
  return st.Run();
}

Result<std::optional<RunRecord>> HistoryDb::NewestRunIn(const std::string& checkpoint_dir) {
  TRIB_ASSIGN_OR_RETURN(
      SqliteStatement st,
      SqliteStatement::Prepare(
          db_,
          fmt::format("SELECT {} FROM runs WHERE checkpoint_dir = ?1 ORDER BY id DESC LIMIT 1",
                      columns_),
          "history database " + path_ + ": finding the run of " + checkpoint_dir));
  st.Bind(1, checkpoint_dir);
  TRIB_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return std::optional<RunRecord>();
  return std::optional<RunRecord>(RunFromRow(st));
}

Result<std::optional<RunRecord>> HistoryDb::RunByUid(const std::string& run_uid) {
  TRIB_ASSIGN_OR_RETURN(
      SqliteStatement st,
      SqliteStatement::Prepare(
          db_,
          fmt::format("SELECT {} FROM runs WHERE run_uid = ?1 ORDER BY id DESC LIMIT 1", columns_),
          "history database " + path_ + ": finding run " + run_uid));
  st.Bind(1, run_uid);
  TRIB_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return std::optional<RunRecord>();
  return std::optional<RunRecord>(RunFromRow(st));
}

Result<std::vector<RunRecord>> HistoryDb::ListRuns(int64_t limit) {
  TRIB_ASSIGN_OR_RETURN(
      SqliteStatement st,
      SqliteStatement::Prepare(
          db_, fmt::format("SELECT {} FROM runs ORDER BY id DESC LIMIT ?1", columns_),
          "history database " + path_ + ": listing runs"));
  st.Bind(1, limit > 0 ? limit : int64_t{-1});
  std::vector<RunRecord> runs;
  while (true) {
    TRIB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) return runs;
    runs.push_back(RunFromRow(st));
  }
}

Result<RunRecord> HistoryDb::GetRun(int64_t id) {
  TRIB_ASSIGN_OR_RETURN(
      SqliteStatement st,
      SqliteStatement::Prepare(db_, fmt::format("SELECT {} FROM runs WHERE id = ?1", columns_),
                               fmt::format("history database {}: reading run {}", path_, id)));
  st.Bind(1, id);
  TRIB_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return Status::NotFound(fmt::format("there is no run {} in the history {}", id, path_));
  return RunFromRow(st);
}

Result<std::vector<RoundRecord>> HistoryDb::GetRounds(int64_t run_id) {
  TRIB_ASSIGN_OR_RETURN(
      SqliteStatement st,
      SqliteStatement::Prepare(
          db_, fmt::format("SELECT {} FROM rounds WHERE run_id = ?1 ORDER BY round", kRoundColumns),
          fmt::format("history database {}: reading the rounds of run {}", path_, run_id)));
  st.Bind(1, run_id);
  std::vector<RoundRecord> rounds;
  while (true) {
    TRIB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) return rounds;
    rounds.push_back(RoundFromRow(st));
  }
}

Result<std::vector<EventRecord>> HistoryDb::EventsAfter(int64_t run_id, int64_t after,
                                                        int64_t limit) {
  TRIB_ASSIGN_OR_RETURN(
      SqliteStatement st,
      SqliteStatement::Prepare(
          db_,
          "SELECT run_id, seq, at, json FROM events WHERE run_id = ?1 AND "
          "seq > ?2 ORDER BY seq LIMIT ?3",
          fmt::format("history database {}: reading the events of run {}", path_, run_id)));
  st.Bind(1, run_id).Bind(2, after).Bind(3, limit > 0 ? limit : int64_t{-1});
  std::vector<EventRecord> events;
  while (true) {
    TRIB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) return events;
    events.push_back(EventRecord{st.Int(0), st.Int(1), st.Real(2), st.Text(3)});
  }
}

Result<std::vector<std::pair<int64_t, std::string>>> HistoryDb::CheckpointPaths(int64_t run_id) {
  TRIB_ASSIGN_OR_RETURN(
      SqliteStatement st,
      SqliteStatement::Prepare(db_,
                               "SELECT round, checkpoint_path FROM rounds WHERE run_id = ?1 AND "
                               "checkpoint_path != '' ORDER BY round",
                               fmt::format("history database {}: reading the checkpoint paths of "
                                           "run {}",
                                           path_, run_id)));
  st.Bind(1, run_id);
  std::vector<std::pair<int64_t, std::string>> paths;
  while (true) {
    TRIB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) return paths;
    paths.emplace_back(st.Int(0), st.Text(1));
  }
}

Result<int64_t> HistoryDb::LastEventSeq(int64_t run_id) {
  TRIB_ASSIGN_OR_RETURN(
      SqliteStatement st,
      SqliteStatement::Prepare(
          db_, "SELECT coalesce(max(seq), 0) FROM events WHERE run_id = ?1",
          fmt::format("history database {}: reading the events of run {}", path_, run_id)));
  st.Bind(1, run_id);
  TRIB_ASSIGN_OR_RETURN(bool row, st.Step());
  return row ? st.Int(0) : int64_t{0};
}

}  // namespace tributary
