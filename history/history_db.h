// HistoryDb: the run history, a SQLite database that tributary-coordinator and tributary-sim write
// as their runs go (RunHistory, history/run_history.h) and `tributary runs` reads.
//
// Schema version kSchemaVersion, kept in PRAGMA user_version:
//   runs(id INTEGER PRIMARY KEY, producer, config_json, model, strategy, rounds_total,
//        rounds_done, status, error, started_at, ended_at, updated_at, host, pid, pid_started,
//        checkpoint_dir, event_log, final_model, resumes, run_uid)
//   rounds(run_id, round, attempts, selected, opened_at, closed_at, duration_seconds, accepted,
//          refused, dropped, bytes_up, bytes_down, num_examples, eval_loss, eval_accuracy,
//          federated_loss, federated_accuracy, epsilon, checkpoint_path)
//          PRIMARY KEY (run_id, round)
//   events(run_id, seq, at, json)  PRIMARY KEY (run_id, seq): every run event, as ToJson writes it
// run_uid (version 2) is the run's unique id (RunDriver::run_uid, also in its checkpoints and its
// RunStarted event): what a resumed run's record is found by, whichever database or directory its
// runs share; '' for runs recorded by version 1. Opening a version-1 database for writing migrates
// it to version 2 (one transaction); read-only, it is read as it is (run_uid '').
// Times are unix seconds (REAL, wall clock). A run's status is written as 'running', 'finished',
// 'failed' or 'stopped'. Readers report a 'running' run whose writer is gone from this host as
// "interrupted" (ReportedStatus); that is never written, so a resumed run is simply 'running'
// again.
//
// Concurrency: WAL journal. Readers (`tributary runs`, while a run is live) neither block the
// writer nor see part of a transaction. Writers (several coordinators sharing the default
// database) take turns: Begin() takes the write lock at once (BEGIN IMMEDIATE) and waits up to
// kBusyTimeoutMs for it, as every statement does.
//
// Crash safety is SQLite's: what a transaction writes is in the database in full or not at all,
// whenever the writer dies. synchronous = NORMAL: in WAL mode a commit survives the writer's crash
// (SIGKILL, an abort: the WAL is already in the OS's page cache) but not a power cut, which may
// take back the last commits and never corrupts the file. FULL would fsync the WAL at every
// commit, on the run's thread, for a record whose truth is the checkpoint anyway: a resumed run
// rewrites the rounds after the checkpoint's (RunHistory).
//
// Errors: a Status that names the database's path and the operation, with SQLite's message.
// Opening a file that is not a database (or is damaged) is Corruption; one that is a database of
// something else, or of a newer schema, FailedPrecondition; a missing file opened read-only
// NotFound (reading never creates the file).
//
// Not thread-safe: one HistoryDb per thread. Several HistoryDbs, in any processes, may share a
// file.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tributary/result.h"

struct sqlite3;

namespace tributary {

struct RunRecord {
  int64_t id = 0;
  std::string producer;     // "tributary-coordinator", "tributary-sim"
  std::string config_json;  // the run's configuration: {"key": value, ...}
  std::string model;
  std::string strategy;
  int64_t rounds_total = 0;
  int64_t rounds_done = 0;
  std::string status;  // as written: running, finished, failed, stopped
  std::string error;   // why it failed, or why it ended before its last round
  double started_at = 0;
  std::optional<double> ended_at;
  double updated_at = 0;
  std::string host;
  int64_t pid = 0;
  int64_t pid_started = 0;     // the writer's start time (ProcessIdentity::start_ticks)
  std::string checkpoint_dir;  // absolute; "" when the run keeps none
  std::string event_log;       // absolute
  std::string final_model;     // absolute, once saved
  int64_t resumes = 0;         // how many times the run was resumed from a checkpoint
  std::string run_uid;         // the run's unique id; "" for runs recorded before version 2
};

struct RoundRecord {
  int64_t run_id = 0;
  int64_t round = 0;
  int64_t attempts = 0;
  int64_t selected = 0;
  double opened_at = 0;
  std::optional<double> closed_at;  // empty while open
  double duration_seconds = 0;      // the run's clock (simulated time in tributary-sim)
  int64_t accepted = 0;
  int64_t refused = 0;
  int64_t dropped = 0;
  int64_t bytes_up = 0;
  int64_t bytes_down = 0;
  int64_t num_examples = 0;
  std::optional<double> eval_loss, eval_accuracy;            // server-side evaluation
  std::optional<double> federated_loss, federated_accuracy;  // federated evaluation
  std::optional<double> epsilon;                             // privacy spent, with DP
  std::string checkpoint_path;                               // "" when none was written
};

struct EventRecord {
  int64_t run_id = 0;
  int64_t seq = 0;  // 1, 2, ... in the run
  double at = 0;
  std::string json;
};

// "interrupted" for a run written as running whose writer is gone (ProcessMayBeRunning), else
// the status as written.
std::string ReportedStatus(const RunRecord& run);

class HistoryDb {
 public:
  static constexpr int kSchemaVersion = 2;
  static constexpr int kBusyTimeoutMs = 10000;

  enum class Mode {
    kReadOnly,   // the file must exist; nothing is written, not even the schema
    kReadWrite,  // creates the file (and its directory) and the schema when missing
  };
  static Result<std::unique_ptr<HistoryDb>> Open(const std::string& path, Mode mode);
  ~HistoryDb();
  HistoryDb(const HistoryDb&) = delete;
  HistoryDb& operator=(const HistoryDb&) = delete;

  const std::string& path() const { return path_; }

  // A write transaction: Begin takes the write lock; Commit makes everything since durable at
  // once; Rollback drops it. Without Begin each write is its own transaction.
  Status Begin();
  Status Commit();
  void Rollback();
  // A read transaction: the reads until Commit or Rollback see one moment of the database.
  Status BeginRead();

  // Writing. InsertRun ignores run.id and returns the new one.
  Result<int64_t> InsertRun(const RunRecord& run);
  Status UpdateRun(const RunRecord& run);     // every field, by run.id
  Status PutRound(const RoundRecord& round);  // inserts or replaces (run_id, round)
  Status DeleteRoundsAfter(int64_t run_id, int64_t round);
  Status SetCheckpointPath(int64_t run_id, int64_t round, const std::string& path);
  Status AppendEvent(const EventRecord& event);

  // Reading.
  // The newest run that kept its checkpoints in `checkpoint_dir` (absolute), if any.
  Result<std::optional<RunRecord>> NewestRunIn(const std::string& checkpoint_dir);
  // The run with this run_uid (non-empty), if any.
  Result<std::optional<RunRecord>> RunByUid(const std::string& run_uid);
  // Newest first; limit <= 0: all.
  Result<std::vector<RunRecord>> ListRuns(int64_t limit);
  // NotFound naming the id and the database when there is no such run.
  Result<RunRecord> GetRun(int64_t id);
  Result<std::vector<RoundRecord>> GetRounds(int64_t run_id);
  // Events with seq > after, oldest first, at most `limit`.
  Result<std::vector<EventRecord>> EventsAfter(int64_t run_id, int64_t after, int64_t limit);
  // {round, checkpoint_path} of the run's rounds that have one.
  Result<std::vector<std::pair<int64_t, std::string>>> CheckpointPaths(int64_t run_id);
  // The run's last event's seq; 0 when it has none.
  Result<int64_t> LastEventSeq(int64_t run_id);

 private:
  HistoryDb() = default;
  Status Exec(const char* sql, const char* what);
  // The schema's version: 0 when the database is new (no schema yet); the errors Open describes.
  Result<int64_t> CheckSchema(Mode mode);
  // Creates the schema in a new database, or migrates an older one to kSchemaVersion.
  Status CreateSchema();
  Status Error(int rc, const std::string& what) const;

  std::string path_;
  sqlite3* db_ = nullptr;
  const char* columns_ = nullptr;  // the runs' columns to select (a version-1 file's lack run_uid)
};

}  // namespace tributary
