// RunHistory: a RunObserver (coordinator/run_events.h) that records its run in the run history
// (HistoryDb, history/history_db.h): the run's row, a row per round and every event.
//
// RunStarted makes the run's record, with the run's run_uid. A resumed run (resumed_from is set)
// continues the record with its run_uid (the checkpoint's: the run that wrote it, whatever other
// runs the database or the directory saw since); a checkpoint of an earlier version, without one,
// continues the newest record of its checkpoint directory when that has no run_uid either. The
// record's status goes back to 'running', resumes + 1, and the round rows after the checkpoint's
// round are dropped (the rounds the resumed run does again); with no such record (the history was
// off, or is new) it gets a new one. Every other run gets a new record, so two runs are two
// records even when they share one database and one checkpoint directory. Then each event is
// appended to the run's events and updates its round's row (RoundOpened, UpdateAccepted,
// UpdateRefused, RoundFailed, CheckpointWritten, Evaluated, FederatedEvaluated, RoundClosed) or the
// run's (RoundClosed: rounds_done; RunFinished: status 'finished' when every round is done or the
// run stopped by design, e.g. its privacy budget, 'stopped' when it was stopped before its last
// round, 'failed' with the error otherwise, and the final model).
//
// Checkpoint paths are where each round's checkpoint is now. Before it writes the newest one,
// SaveCheckpoint (coordinator/checkpoint.h) moves each older file that exists one generation down
// (checkpoint.1.safetensors, ...), over the one there, up to output.keep_checkpoints; every
// CheckpointWritten moves the older rounds' paths the same way (a round whose file is gone has
// none).
//
// Writes are batched: events are kept in memory and committed in one short transaction at
// RunStarted, RoundOpened, RoundFailed, CheckpointWritten, RoundClosed, ClientRefused (a client
// refused at Hello: a run that refuses all its clients has no other commit) and RunFinished, when
// more than kMaxPendingEvents are waiting (simulated rounds accept thousands of updates), and when
// destroyed. A round costs a few commits, not one per update, and the database's write lock is held
// only while committing. What a crash loses is what was not committed: at most the events since
// the last of those points.
//
// Failure: a write that fails (a full disk, a lock held past HistoryDb::kBusyTimeoutMs) is logged
// once as a warning, and the history is then off for the rest of the run; it never stops the run.
//
// Not thread-safe: events come on the run's thread (which a commit holds for as long as the write
// lock takes; normally well under a millisecond).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "coordinator/run_events.h"
#include "history/history_db.h"

namespace tributary {

class RunHistory final : public RunObserver {
 public:
  static constexpr size_t kMaxPendingEvents = 500;

  // What the events do not say about the run.
  struct Identity {
    std::string producer;        // "tributary-coordinator", "tributary-sim"
    std::string config_json;     // ConfigJson (history/config_json.h)
    std::string checkpoint_dir;  // made absolute; "" when the run keeps none
    std::string event_log;       // likewise
    // output.keep_checkpoints: the rounds' checkpoint paths follow their files as newer
    // checkpoints push them down the generations (checkpoint.1.safetensors, ...) and out; 0:
    // paths stay as written.
    int64_t keep_checkpoints = 0;
  };

  // Opens (or creates) the database at `path`; its errors, naming the path.
  static Result<std::unique_ptr<RunHistory>> Open(const std::string& path, Identity identity);
  // For the programs, from key output.history's value (ResolveHistoryPath): null without an error
  // when the value is "none", or when the default database cannot be opened (a warning says why:
  // the run goes on without history); the error, naming the key, when the database the key names
  // cannot be opened.
  static Result<std::unique_ptr<RunHistory>> OpenForRun(const std::string& key_value,
                                                        Identity identity);
  // Commits what is pending. A run that saw no RunFinished is recorded as failed ("the program
  // ended before the run did"): its program is exiting (it could not listen, say). A crash runs no
  // destructor and leaves 'running', which readers show as interrupted.
  ~RunHistory() override;

  void OnEvent(const RunEvent& event) override;

  // The run's id in the database: 0 before RunStarted, or when recording it failed.
  int64_t run_id() const { return run_.id; }
  // False once a write failed.
  bool enabled() const { return enabled_; }
  const std::string& path() const { return db_->path(); }
  // Transactions committed (for tests of the batching).
  int64_t commits() const { return commits_; }

 private:
  RunHistory(std::unique_ptr<HistoryDb> db, Identity identity);
  Status Start(const RunStarted& e, double now);
  // Touches round `round`'s row (making it when this process has not seen it).
  RoundRecord& Round(uint64_t round, double now);
  void Flush();
  // After round `newest`'s checkpoint: the older rounds' paths move a generation down.
  Status MoveCheckpointPaths(int64_t newest);
  void Disable(const Status& why);

  std::unique_ptr<HistoryDb> db_;
  Identity identity_;
  bool enabled_ = true;
  RunRecord run_;
  int64_t seq_ = 0;  // the last event's
  std::vector<EventRecord> pending_;
  std::map<int64_t, RoundRecord> rounds_;  // the rounds this process has seen
  std::set<int64_t> dirty_;                // rounds to write at the next commit
  std::optional<int64_t> rotated_;         // a checkpoint's round: the older ones' paths move
  int64_t commits_ = 0;
};

}  // namespace tributary
