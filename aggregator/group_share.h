// GroupShare: an aggregator's part of one round (docs/tier.md), as a state machine that knows
// nothing of sockets: the clients the coordinator's GroupTask named, their updates judged and
// folded exactly as the coordinator would fold them, and the GroupResults that carry them up.
//
// Each update is judged like the coordinator's RoundEngine judges it: the sender holds a task of
// this share and has not answered, the round, task id and model version are the task's (an answer
// to an earlier attempt's task is refused as late, before it counts as this member's), the deadline
// has not passed, its content is the run's (CheckUpdateContent: layout, size, codec, num_examples
// within run.min_num_examples .. the sender's Hello, values that validate) and the strategy can
// fold it (Strategy::CheckUpdate with the weight RoundConfig::WeightOf). An accepted update goes
// into the strategy's exact fixed-point sum (the same Strategy the coordinator runs, so the same
// PartialSum bits), a refused one is answered with an Error by the caller; both get a GroupRecord.
//
// A result is due (Due) when records are waiting and every member has answered or left, or the
// flush time (shortly before the task's deadline, so it reaches the coordinator in time) has
// passed, or, the first time, once the group's share of the round's quota is accepted:
// ceil(members / run.over_selection) updates (every member without over-selection). The
// coordinator closes a round at its quota, so with over-selection a group does not hold back
// what it has until its slowest members answer; what comes after goes up with the last member's
// answer or at the flush time. TakeResult encodes the waiting records and the sum of their
// accepted updates and starts a fresh sum, so each result carries updates no earlier one carried;
// the coordinator adds them.
//
// Not thread-safe: one strand.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "aggregation/strategy.h"
#include "compression/codec.h"
#include "coordinator/client_registry.h"
#include "coordinator/tier_config.h"
#include "coordinator/update_check.h"
#include "core/clock.h"
#include "protocol/messages.h"

namespace tributary {

class GroupShare {
 public:
  // `task` is the coordinator's (its members, the task they train); `zero` a model of the run's
  // layout (its values are not used); `flush_at` when a result is due whatever is missing.
  static Result<std::unique_ptr<GroupShare>> Start(const TierConfig& config, const GroupTask& task,
                                                   const ModelWeights& zero, TimePoint now,
                                                   TimePoint flush_at);

  uint64_t round() const { return round_; }
  uint64_t model_version() const { return model_version_; }
  // Every member's TaskAssignment (fit.seed set to the member's), sharing one model.
  std::vector<std::pair<std::string, TaskAssignment>> Tasks() const;

  // Judges and folds `id`'s update; OK when accepted, else the refusal (the Error to send).
  // `sender` is the client's record (its Hello), null when it has none.
  std::optional<UpdateRefusal> OnUpdate(const std::string& id, const UpdateSubmission& update,
                                        const ClientRecord* sender, TimePoint now);
  // A member left: it will not answer (the coordinator learns it from the membership).
  void OnLeft(const std::string& id);
  // A member could not do its task (TaskFailed): it has answered, with a record whose code is
  // TASK_FAILED and whose reason is the client's, which the coordinator counts as a dropout, not
  // a refusal. FailedPrecondition, changing nothing, when `failed` names no task `id` still holds
  // here.
  Status OnTaskFailed(const std::string& id, const TaskFailed& failed);

  bool Due(TimePoint now) const;
  bool has_records() const { return !records_.empty(); }
  // Whether a record of `id` waits to go up (in the next TakeResult).
  bool HasRecordOf(const std::string& id) const;
  // The waiting records and their partial sum; Internal if the sum cannot be encoded.
  Result<GroupResult> TakeResult();
  // Every member answered or left, and every record was taken: nothing more will come.
  bool Done() const { return pending_.empty() && records_.empty(); }
  TimePoint flush_at() const { return flush_at_; }
  TimePoint deadline() const { return deadline_; }

 private:
  GroupShare() = default;

  TierConfig config_;
  std::unique_ptr<Strategy> strategy_;
  std::unique_ptr<Codec> codec_;
  ModelWeights zero_;
  TaskAssignment task_;
  std::map<std::string, uint64_t> seeds_;  // member -> fit seed
  std::set<std::string> pending_;          // members that have not answered or left
  uint64_t round_ = 0;
  uint64_t model_version_ = 0;
  TimePoint deadline_{}, flush_at_{};
  std::vector<GroupRecord> records_;  // not yet sent
  size_t quota_ = 0;                  // accepted updates that make the first result due
  size_t accepted_ = 0;               // accepted so far, in every result
  bool quota_sent_ = false;           // a result went up once the quota was reached
};

}  // namespace tributary
