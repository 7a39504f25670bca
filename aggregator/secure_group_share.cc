#include "aggregator/secure_group_share.h"

#include <fmt/format.h>

#include <set>

#include "coordinator/secagg_cohort.h"
#include "privacy/secagg/secagg_start.h"
#include "privacy/secagg/secagg_wire.h"

namespace tributary {

Result<std::unique_ptr<SecureGroupShare>> SecureGroupShare::Start(
    const TierConfig& config, const GroupTask& task, const std::vector<std::string>& connected,
    TimePoint now) {
  if (task.secagg.round != task.task.round)
    return Status::InvalidArgument(
        fmt::format("the secure aggregation start is for round {}, the task for round {}",
                    task.secagg.round, task.task.round));
  TRIB_ASSIGN_OR_RETURN(SecAggStart start, FromWire(task.secagg));
  SecAggRound::Options o;
  o.session = start.session;
  o.domain = start.domain;
  o.phase_timeout = config.round.secagg.phase_timeout;
  o.dp_clip_norm = start.dp.clip_norm;
  o.dp_noise_stddev = start.dp.noise_stddev;
  o.dp_noise_seed = start.dp.noise_seed;
  o.decode = false;  // the coordinator adds this sum to the other groups' and decodes once
  const TimePoint input_deadline = now + std::chrono::milliseconds(task.task.deadline_ms);
  std::unique_ptr<SecureGroupShare> s(new SecureGroupShare());
  s->round_ = task.task.round;
  s->task_id_ = task.task.task_id;
  s->model_version_ = task.task.model_version;
  TRIB_ASSIGN_OR_RETURN(s->session_,
                        SecAggRound::Start(std::move(o), connected, now, input_deadline));
  // Each client hears that its round is secure (the session's start) before its task.
  s->outbox_ = s->TakeOutbox();
  s->members_ = std::set<std::string>(connected.begin(), connected.end());
  const std::set<std::string>& here = s->members_;
  for (const GroupAssignee& m : task.members) {
    if (!here.count(m.client_id)) continue;
    TaskAssignment t = task.task;  // shares the model
    t.fit.seed = m.fit_seed;
    s->outbox_.push_back({m.client_id, std::move(t)});
  }
  return s;
}

Status SecureGroupShare::OnSecAgg(const std::string& id, const Message& message, TimePoint now) {
  return FeedSecAgg(*session_, id, message, now);
}

void SecureGroupShare::OnLeft(const std::string& id, TimePoint now) { session_->OnLeft(id, now); }

void SecureGroupShare::OnTick(TimePoint now) { session_->OnTick(now); }

std::vector<SecureGroupShare::Outgoing> SecureGroupShare::TakeOutbox() {
  std::vector<Outgoing> out;
  out.swap(outbox_);
  for (SecAggRound::Outgoing& o : session_->TakeOutbox())
    out.push_back({std::move(o.client_id), std::move(o.message)});
  return out;
}

GroupResult SecureGroupShare::TakeResult() const {
  GroupResult r;
  r.round = round_;
  r.task_id = task_id_;
  r.model_version = model_version_;
  r.secagg_bits = static_cast<uint32_t>(session_->domain().sum_bits());
  r.secagg_length = session_->session().vector_length;
  if (session_->state() != SecAggRound::State::kDone) {
    r.secagg_failure =
        session_->state() == SecAggRound::State::kFailed
            ? session_->failure().message()
            : std::string("the session was still in phase '") + session_->phase_name() + "'";
    return r;
  }
  // The bytes each survivor sent (its masked input and its protocol messages), spread evenly: the
  // session counts them per group, not per client.
  const std::vector<std::string>& survivors = session_->survivors();
  const uint64_t bytes = session_->masked_bytes_up() + session_->protocol_bytes_up();
  for (const std::string& id : survivors) {
    GroupRecord rec;
    rec.client_id = id;
    rec.bytes_up = survivors.empty() ? 0 : bytes / survivors.size();
    r.records.push_back(std::move(rec));
  }
  r.partial = SharedBytes(PackBits(session_->sum(), session_->domain().sum_bits()));
  return r;
}

}  // namespace tributary
