#include "history/run_history.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <type_traits>

#include "coordinator/checkpoint.h"
#include "core/log.h"
#include "core/wall_clock.h"
#include "history/history_path.h"
#include "history/process_identity.h"

namespace tributary {
namespace {

double Now() { return UnixSeconds(); }

// The same directory always gives the same text, however the run named it (relative, through a
// symbolic link): it is what a resumed run's record is found by.
std::string Absolute(const std::string& path) {
  if (path.empty()) return path;
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(path, ec).lexically_normal();
  if (ec) return path;
  std::filesystem::path p = std::filesystem::weakly_canonical(absolute, ec);
  if (ec) p = absolute;
  std::string out = p.string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();  // "ck/" is "ck"
  return out;
}

int64_t Signed(uint64_t v) { return static_cast<int64_t>(std::min<uint64_t>(v, INT64_MAX)); }

}  // namespace

RunHistory::RunHistory(std::unique_ptr<HistoryDb> db, Identity identity)
    : db_(std::move(db)), identity_(std::move(identity)) {
  identity_.checkpoint_dir = Absolute(identity_.checkpoint_dir);
  identity_.event_log = Absolute(identity_.event_log);
}

Result<std::unique_ptr<RunHistory>> RunHistory::Open(const std::string& path, Identity identity) {
  TRIB_ASSIGN_OR_RETURN(std::unique_ptr<HistoryDb> db,
                        HistoryDb::Open(path, HistoryDb::Mode::kReadWrite));
  return std::unique_ptr<RunHistory>(new RunHistory(std::move(db), std::move(identity)));
}

Result<std::unique_ptr<RunHistory>> RunHistory::OpenForRun(const std::string& key_value,
                                                           Identity identity) {
  const std::string path = ResolveHistoryPath(key_value);
  if (path.empty()) {
    if (key_value != "none")
      Log().warn(
          "history: no home directory to keep the run history in; the run goes on without it "
          "(set output.history)");
    return std::unique_ptr<RunHistory>();
  }
  Result<std::unique_ptr<RunHistory>> history = Open(path, std::move(identity));
  if (history.ok()) return history;
  // The file the user named must work; the default one is a convenience.
  if (!key_value.empty()) return history.status().WithContext("key 'output.history'");
  Log().warn(
      "history: {}; the run goes on without history (set output.history to another file, "
      "or to \"none\")",
      history.status().ToString());
  return std::unique_ptr<RunHistory>();
}

RunHistory::~RunHistory() {
  if (!enabled_ || run_.id == 0) return;
  if (run_.status == "running") {
    // The program is ending without having finished the run (it could not listen, say): the
    // record must not read as an interrupted run that a resume would continue.
    run_.status = "failed";
    run_.error = "the program ended before the run did";
    run_.ended_at = Now();
    Flush();
  } else if (!pending_.empty() || !dirty_.empty()) {
    Flush();
  }
}

void RunHistory::Disable(const Status& why) {
  enabled_ = false;
  pending_.clear();
  dirty_.clear();
  Log().warn(
      "history {}: {}; the run goes on, no longer recorded there (further errors are not "
      "reported)",
      db_->path(), why.ToString());
}

Status RunHistory::Start(const RunStarted& e, double now) {
  TRIB_RETURN_IF_ERROR(db_->Begin());
  Status status = [&]() -> Status {
    std::optional<RunRecord> previous;
    if (!e.resumed_from.empty()) {
      // The record of the run that wrote the checkpoint: the one with its run_uid. A checkpoint
      // of an earlier version (no uid; the driver gave the run a new one) continues the newest
      // record in its directory, when that one is from before run uids too.
      if (!e.run_uid.empty()) {
        TRIB_ASSIGN_OR_RETURN(previous, db_->RunByUid(e.run_uid));
      }
      if (!previous && !identity_.checkpoint_dir.empty()) {
        TRIB_ASSIGN_OR_RETURN(previous, db_->NewestRunIn(identity_.checkpoint_dir));
        if (previous && !previous->run_uid.empty()) previous.reset();
      }
    }
    if (previous) {
      run_ = std::move(*previous);
      run_.resumes += 1;
      run_.ended_at.reset();
      run_.error.clear();
      run_.final_model.clear();
      // The rounds after the checkpoint's are done again: their old rows would be stale.
      TRIB_RETURN_IF_ERROR(db_->DeleteRoundsAfter(run_.id, Signed(e.rounds_done)));
      TRIB_ASSIGN_OR_RETURN(seq_, db_->LastEventSeq(run_.id));
    } else {
      run_ = RunRecord();
      run_.started_at = now;
      run_.resumes = e.resumed_from.empty() ? 0 : 1;
      run_.status = "running";
      TRIB_ASSIGN_OR_RETURN(run_.id, db_->InsertRun(run_));
      seq_ = 0;
    }
    const ProcessIdentity self = ThisProcess();
    run_.producer = identity_.producer;
    run_.config_json = identity_.config_json;
    run_.model = e.model.empty() ? e.initial_model : e.model;
    run_.strategy = e.strategy;
    run_.rounds_total = e.rounds;
    run_.rounds_done = Signed(e.rounds_done);
    run_.status = "running";
    run_.updated_at = now;
    run_.host = self.host;
    run_.pid = self.pid;
    run_.pid_started = self.start_ticks;
    run_.checkpoint_dir = identity_.checkpoint_dir;
    run_.event_log = identity_.event_log;
    run_.run_uid = e.run_uid;
    TRIB_RETURN_IF_ERROR(db_->UpdateRun(run_));
    return db_->AppendEvent(EventRecord{
        run_.id, ++seq_, now,
        ToJson(RunEvent(e)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)});
  }();
  if (status.ok()) status = db_->Commit();
  if (!status.ok()) {
    db_->Rollback();
    run_.id = 0;
    return status;
  }
  ++commits_;
  rounds_.clear();
  rotated_.reset();
  dirty_.clear();
  pending_.clear();
  Log().info("history: run {} in {}{}", run_.id, db_->path(),
             run_.resumes == 0   ? std::string()
             : run_.resumes == 1 ? std::string(" (resumed once)")
                                 : fmt::format(" (resumed {} times)", run_.resumes));
  return Status::Ok();
}

RoundRecord& RunHistory::Round(uint64_t round, double now) {
  const int64_t r = Signed(round);
  auto [it, inserted] = rounds_.try_emplace(r);
  if (inserted) {
    it->second.run_id = run_.id;
    it->second.round = r;
    it->second.opened_at = now;
  }
  dirty_.insert(r);
  return it->second;
}

void RunHistory::Flush() {
  Status status = db_->Begin();
  if (status.ok()) {
    status = [&]() -> Status {
      for (const EventRecord& e : pending_) TRIB_RETURN_IF_ERROR(db_->AppendEvent(e));
      for (int64_t r : dirty_) TRIB_RETURN_IF_ERROR(db_->PutRound(rounds_.at(r)));
      if (rotated_) TRIB_RETURN_IF_ERROR(MoveCheckpointPaths(*rotated_));
      run_.updated_at = Now();
      TRIB_RETURN_IF_ERROR(db_->UpdateRun(run_));
      return db_->Commit();
    }();
    if (!status.ok()) db_->Rollback();
  }
  if (!status.ok()) return Disable(status);
  ++commits_;
  pending_.clear();
  dirty_.clear();
  rotated_.reset();
}

Status RunHistory::MoveCheckpointPaths(int64_t newest) {
  const int keep = static_cast<int>(identity_.keep_checkpoints);
  const std::string& dir = identity_.checkpoint_dir;
  if (keep <= 0 || dir.empty()) return Status::Ok();
  // Which round's checkpoint each generation holds, before this one was written.
  std::vector<int64_t> holder(static_cast<size_t>(keep), 0);
  bool written = false;
  TRIB_ASSIGN_OR_RETURN(auto paths, db_->CheckpointPaths(run_.id));
  for (const auto& [round, path] : paths) {
    if (round == newest) {
      written = true;
      continue;
    }
    for (int g = 0; g < keep; ++g)
      if (path == CheckpointPath(dir, g)) holder[static_cast<size_t>(g)] = round;
  }
  // SaveCheckpoint's moves: from the oldest generation up, each file that exists takes the next
  // one's place (the one there is gone); a missing one moves nothing.
  std::map<int64_t, std::string> moved;
  for (int g = keep - 1; g >= 1; --g) {
    const size_t from = static_cast<size_t>(g - 1), to = static_cast<size_t>(g);
    if (holder[from] == 0) continue;
    if (holder[to] != 0) moved[holder[to]] = "";
    moved[holder[from]] = CheckpointPath(dir, g);
    holder[to] = holder[from];
    holder[from] = 0;
  }
  if (keep == 1 && written && holder[0] != 0) moved[holder[0]] = "";  // written over
  for (const auto& [round, path] : moved) {
    TRIB_RETURN_IF_ERROR(db_->SetCheckpointPath(run_.id, round, path));
    auto it = rounds_.find(round);
    if (it != rounds_.end()) it->second.checkpoint_path = path;
  }
  return Status::Ok();
}

void RunHistory::OnEvent(const RunEvent& event) {
  if (!enabled_) return;
  const double now = Now();
  if (const auto* started = std::get_if<RunStarted>(&event)) {
    if (Status s = Start(*started, now); !s.ok()) Disable(s);
    return;
  }
  if (run_.id == 0) return;  // no RunStarted: not a run this observer was given from its start
  pending_.push_back(
      EventRecord{run_.id, ++seq_, now,
                  ToJson(event).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)});
  bool commit = false;
  std::visit(
      [&](const auto& e) {
        using E = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<E, RoundOpened>) {
          RoundRecord& r = Round(e.round, now);
          if (e.attempt > 1) {  // the live counts are the current attempt's
            r.accepted = r.refused = r.bytes_up = r.num_examples = 0;
            r.closed_at.reset();
          }
          r.attempts = e.attempt;
          r.selected = e.selected;
          commit = true;
        } else if constexpr (std::is_same_v<E, UpdateAccepted>) {
          RoundRecord& r = Round(e.round, now);
          r.accepted += 1;
          r.bytes_up += Signed(e.bytes);
          r.num_examples += Signed(e.num_examples);
        } else if constexpr (std::is_same_v<E, UpdateRefused>) {
          // Only the open round's refusals count in its row, as in the round engine's summary: a
          // late update for a closed round (or one for a round not yet open) is in the events only.
          if (auto it = rounds_.find(Signed(e.round));
              it != rounds_.end() && !it->second.closed_at) {
            it->second.refused += 1;
            dirty_.insert(it->first);
          }
        } else if constexpr (std::is_same_v<E, RoundFailed>) {
          Round(e.round, now).attempts = e.attempt;
          commit = true;
        } else if constexpr (std::is_same_v<E, CheckpointWritten>) {
          // The older files moved even when writing this one failed: they move before it is
          // written.
          Round(e.round, now).checkpoint_path = e.error.empty() ? Absolute(e.path) : "";
          rotated_ = Signed(e.round);
          commit = true;
        } else if constexpr (std::is_same_v<E, Evaluated>) {
          RoundRecord& r = Round(e.round, now);
          r.eval_loss = e.loss;
          r.eval_accuracy = e.accuracy;
        } else if constexpr (std::is_same_v<E, RoundClosed>) {
          const RoundSummary& s = e.summary;
          RoundRecord& r = Round(s.round, now);
          r.attempts = s.attempts;
          r.selected = s.selected;
          r.accepted = s.accepted;
          r.refused = s.refused;
          r.dropped = s.dropped;
          r.bytes_up = Signed(s.bytes_up);
          r.bytes_down = Signed(s.bytes_down);
          r.num_examples = Signed(s.num_examples);
          r.duration_seconds = s.duration_s;
          r.closed_at = now;
          if (e.evaluation) {
            r.eval_loss = e.evaluation->loss;
            r.eval_accuracy = e.evaluation->accuracy;
          }
          if (s.dp) r.epsilon = s.dp->epsilon;
          run_.rounds_done = std::max(run_.rounds_done, Signed(s.round));
          commit = true;
        } else if constexpr (std::is_same_v<E, FederatedEvaluated>) {
          // Only a round this process ran: a row it has not seen would be written over.
          const int64_t round = Signed(e.summary.round);
          if (rounds_.count(round) != 0) {
            RoundRecord& r = Round(e.summary.round, now);
            r.federated_loss = e.summary.loss;
            r.federated_accuracy = e.summary.accuracy;
          }
        } else if constexpr (std::is_same_v<E, ClientRefused>) {
          // Committed at once: a run whose clients are all refused waits for ever, and the
          // operator looking for why reads the history meanwhile. The refusal digest bounds how
          // often this comes.
          commit = true;
        } else if constexpr (std::is_same_v<E, RunFinished>) {
          run_.rounds_done = Signed(e.rounds_done);
          run_.ended_at = now;
          run_.final_model = Absolute(e.final_model);
          if (!e.ok) {
            run_.status = "failed";
            run_.error = e.status;
          } else if (run_.rounds_done >= run_.rounds_total || !e.stopped.empty()) {
            run_.status = "finished";
            run_.error = e.stopped;
          } else {
            run_.status = "stopped";
          }
          commit = true;
        }
      },
      event);
  if (commit || pending_.size() > kMaxPendingEvents) Flush();
}

}  // namespace tributary
