#include "aggregator/group_share.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "compression/codec_spec.h"

namespace tributary {

Result<std::unique_ptr<GroupShare>> GroupShare::Start(const TierConfig& config,
                                                      const GroupTask& task,
                                                      const ModelWeights& zero, TimePoint now,
                                                      TimePoint flush_at) {
  std::unique_ptr<GroupShare> g(new GroupShare());
  g->config_ = config;
  TRIB_ASSIGN_OR_RETURN(g->strategy_, MakeTierStrategy(config));
  if (g->strategy_->partial_sum() == nullptr)
    return Status::InvalidArgument("strategy " + std::string(g->strategy_->name()) +
                                   " has no partial sum to send");
  if (task.task.codec.spec != config.round.codec)
    return Status::InvalidArgument("the task's codec '" + task.task.codec.spec +
                                   "' is not the run's '" + config.round.codec + "'");
  TRIB_ASSIGN_OR_RETURN(g->codec_, MakeCodec(config.round.codec));
  g->zero_ = zero.ZerosLike();
  TRIB_RETURN_IF_ERROR(g->strategy_->BeginRound(g->zero_));
  g->task_ = task.task;
  g->round_ = task.task.round;
  g->model_version_ = task.task.model_version;
  g->deadline_ = now + std::chrono::milliseconds(task.task.deadline_ms);
  g->flush_at_ = std::min(flush_at, g->deadline_);
  for (const GroupAssignee& m : task.members) {
    g->seeds_[m.client_id] = m.fit_seed;
    g->pending_.insert(m.client_id);
  }
  // The group's share of the round's quota: the coordinator selects ceil(K * over_selection), so a
  // group of m holds about m / over_selection of K (the epsilon keeps 13 / 1.3 at 10, not 11).
  const double over = std::max(1.0, config.round.over_selection);
  g->quota_ = std::max<size_t>(
      1, static_cast<size_t>(std::ceil(static_cast<double>(g->seeds_.size()) / over - 1e-9)));
  return g;
}

std::vector<std::pair<std::string, TaskAssignment>> GroupShare::Tasks() const {
  std::vector<std::pair<std::string, TaskAssignment>> out;
  out.reserve(seeds_.size());
  for (const auto& [id, seed] : seeds_) {
    TaskAssignment t = task_;  // shares the model
    t.fit.seed = seed;
    out.emplace_back(id, std::move(t));
  }
  return out;
}

std::optional<UpdateRefusal> GroupShare::OnUpdate(const std::string& id, const UpdateSubmission& u,
                                                  const ClientRecord* sender, TimePoint now) {
  const std::string r = "round " + std::to_string(u.round);
  auto refuse = [&](ErrorCode code, std::string kind, std::string reason) {
    return UpdateRefusal{code, std::move(kind), std::move(reason)};
  };
  if (u.round != round_)
    return refuse(
        ErrorCode::kProtocolViolation, u.round < round_ ? "late" : "early",
        r + " is not the one this aggregator serves (round " + std::to_string(round_) + ")");
  // An answer to an earlier task of this round (a failed attempt's) is not the current task's.
  if (u.task_id != task_.task_id)
    return refuse(ErrorCode::kProtocolViolation, u.task_id < task_.task_id ? "late" : "early",
                  fmt::format("the update answers task {} of {}, whose current task is {}",
                              u.task_id, r, task_.task_id));
  if (!seeds_.count(id))
    return refuse(ErrorCode::kProtocolViolation, "not assigned", "client was not assigned " + r);
  if (!pending_.count(id))
    return refuse(ErrorCode::kProtocolViolation, "duplicate", "duplicate update for " + r);
  pending_.erase(id);
  GroupRecord rec;
  rec.client_id = id;
  rec.num_examples = u.num_examples;
  rec.bytes_up = u.update.bytes.size() + u.control_delta.size() * sizeof(float);
  rec.metrics = u.metrics;
  std::optional<UpdateRefusal> no = [&]() -> std::optional<UpdateRefusal> {
    if (now > deadline_)
      return refuse(ErrorCode::kProtocolViolation, "late",
                    "late: the deadline of " + r + " passed");
    if (u.model_version != model_version_)
      return refuse(ErrorCode::kProtocolViolation, "old model version",
                    "trained on model version " + std::to_string(u.model_version) +
                        ", current is " + std::to_string(model_version_));
    const uint64_t weight = config_.round.WeightOf(u.num_examples);
    if (std::optional<UpdateRefusal> refused =
            TakeUpdate(config_.round, *codec_, *strategy_, zero_, id, sender, u, r, weight))
      return refused;
    rec.weight = weight;
    return std::nullopt;
  }();
  if (!no) ++accepted_;
  if (no) {
    rec.code = static_cast<uint32_t>(no->code);
    rec.kind = no->kind;
    rec.reason = no->reason;
  }
  records_.push_back(std::move(rec));
  return no;
}

void GroupShare::OnLeft(const std::string& id) { pending_.erase(id); }

Status GroupShare::OnTaskFailed(const std::string& id, const TaskFailed& f) {
  if (!f.fit() || f.round != round_ || f.task_id != task_.task_id || !pending_.count(id))
    return Status::FailedPrecondition(
        fmt::format("it holds no task {} of round {} here (round {} task {} is open)", f.task_id,
                    f.round, round_, task_.task_id));
  pending_.erase(id);
  GroupRecord rec;
  rec.client_id = id;
  rec.code = static_cast<uint32_t>(ErrorCode::kTaskFailed);
  rec.kind = "task failed";
  rec.reason = DescribeError(f.code, f.reason);
  // The reason travels up in a record whose text field has the protocol's cap.
  if (rec.reason.size() > kMaxTextBytes) rec.reason.resize(kMaxTextBytes);
  records_.push_back(std::move(rec));
  return Status::Ok();
}

bool GroupShare::HasRecordOf(const std::string& id) const {
  return std::any_of(records_.begin(), records_.end(),
                     [&](const GroupRecord& r) { return r.client_id == id; });
}

bool GroupShare::Due(TimePoint now) const {
  if (records_.empty()) return false;
  return pending_.empty() || now >= flush_at_ || (!quota_sent_ && accepted_ >= quota_);
}

Result<GroupResult> GroupShare::TakeResult() {
  GroupResult out;
  out.round = round_;
  out.task_id = task_.task_id;
  out.model_version = model_version_;
  TRIB_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, EncodePartialSum(*strategy_->partial_sum()));
  out.partial = SharedBytes(std::move(bytes));
  out.records = std::move(records_);
  records_.clear();
  if (accepted_ >= quota_) quota_sent_ = true;
  TRIB_RETURN_IF_ERROR(strategy_->BeginRound(zero_));  // the next result holds only new updates
  return out;
}

}  // namespace tributary
