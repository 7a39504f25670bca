#include "coordinator/async_engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "compression/l2_clip.h"
#include "coordinator/engine_parts.h"
#include "coordinator/secagg_cohort.h"
#include "coordinator/update_check.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/rng.h"

namespace tributary {
namespace {

// Streams of their own, apart from the synchronous engine's (selection 0x5e1ec7, fit 0xf17).
constexpr uint64_t kAsyncSelectionStream = 0xa5e1ec7;
constexpr uint64_t kAsyncFitSeedStream = 0xaf17;
// The same-refusal streak must span this many different clients: one client's refusals never
// end the run.
constexpr size_t kSameRefusalClients = 2;

}  // namespace

Result<std::unique_ptr<AsyncEngine>> AsyncEngine::Create(RoundConfig config,
                                                         std::unique_ptr<Strategy> strategy,
                                                         ModelWeights initial, uint64_t steps_done,
                                                         uint64_t model_version, Hooks hooks,
                                                         uint64_t dispatches) {
  TRIB_RETURN_IF_ERROR(config.Validate());
  if (!config.asynchronous())
    return Status::InvalidArgument("the asynchronous engine needs run.mode = 'async'");
  if (!strategy) return Status::InvalidArgument("asynchronous engine: no strategy");
  TRIB_RETURN_IF_ERROR(CheckStrategyComposes(*strategy, config));
  std::unique_ptr<DpAggregator> dp;
  if (config.dp.enabled) {
    TRIB_ASSIGN_OR_RETURN(dp, DpAggregator::Create(config.dp, config.BufferSize()));
  }
  if (initial.size() == 0)
    return Status::InvalidArgument("asynchronous engine: the initial model is empty");
  TRIB_ASSIGN_OR_RETURN(std::unique_ptr<Codec> codec, MakeCodec(config.codec));
  TRIB_ASSIGN_OR_RETURN(std::unique_ptr<Codec> download_codec,
                        MakeDownloadCodec(config.download_codec));
  TRIB_ASSIGN_OR_RETURN(StalenessWeight weight,
                        StalenessWeight::Parse(config.async.staleness_weight));
  std::unique_ptr<AsyncEngine> e(new AsyncEngine());
  e->download_ = std::make_unique<DownloadCache>(std::move(download_codec), config.seed);
  e->config_ = std::move(config);
  e->strategy_ = std::move(strategy);
  e->codec_ = std::move(codec);
  e->weight_ = std::move(weight);
  e->model_ = std::move(initial);
  e->steps_done_ = steps_done;
  e->version_ = model_version;
  e->dispatches_ = dispatches;
  e->registry_.SetRound(steps_done + 1);
  e->hooks_ = std::move(hooks);
  e->eval_ =
      std::make_unique<FederatedEval>(e->hooks_.on_federated_eval, e->config_.max_num_examples);
  e->dp_ = std::move(dp);
  return e;
}

void AsyncEngine::OnJoined(const std::string& id, const ClientCapabilities& caps, TimePoint now,
                           const std::string& via) {
  // A reconnect forfeits the old session's task (and its place in a cohort).
  LeaveTask(id, now);
  registry_.Join(id, caps, now, via);
  Fill(now);
}

void AsyncEngine::LeaveTask(const std::string& id, TimePoint now) {
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return;
  const uint64_t cohort = it->second.cohort;
  if (cohort != 0) {
    // The session counts it as a dropout (as in a synchronous round); the cohort ends its tasks.
    cohorts_.at(cohort).session->OnLeft(id, now);
    EndTask(it);
    AfterCohort(cohort, now);
    return;
  }
  EndTask(it);
  ++summary_.dropped;
  CountMissedTask();
}

void AsyncEngine::OnLeft(const std::string& id, TimePoint now) {
  LeaveTask(id, now);
  registry_.Leave(id);
  expired_.erase(id);
  eval_->OnLeft(id);
  Fill(now);
}

Status AsyncEngine::OnTaskFailed(const std::string& id, const TaskFailed& f, TimePoint now) {
  registry_.Touch(id, now);
  if (f.evaluate()) return eval_->OnFailed(id, f.round);
  auto it = tasks_.find(id);
  if (!f.fit() || it == tasks_.end() || f.task_id != it->second.dispatch + 1)
    return Status::FailedPrecondition(
        it == tasks_.end()
            ? fmt::format("it holds no task (task {} named)", f.task_id)
            : fmt::format("it holds task {}, not {}", it->second.dispatch + 1, f.task_id));
  Miss(id, "reported that its task failed", false);
  if (const uint64_t cohort = it->second.cohort; cohort != 0) {
    // Its cohort's session goes on without its masked input (a dropout), as in a round.
    cohorts_.at(cohort).session->OnNoInput(id, now);
    EndTask(it);
    AfterCohort(cohort, now);
  } else {
    EndTask(it);
    ++summary_.dropped;
    CountMissedTask();
  }
  Fill(now);
  return Status::Ok();
}

Status AsyncEngine::Reject(const std::string& id, ErrorCode code, const std::string& reason) {
  Status why = code == ErrorCode::kMalformedMessage ? Status::InvalidArgument(reason)
                                                    : Status::FailedPrecondition(reason);
  outbox_.push_back({id, Error{static_cast<uint32_t>(code), "update refused: " + reason}});
  ++summary_.refused;
  if (hooks_.on_refused) hooks_.on_refused(id, steps_done_ + 1, why);
  return why;
}

Status AsyncEngine::OnUpdate(const std::string& id, const UpdateSubmission& u, TimePoint now) {
  registry_.Touch(id, now);
  const uint64_t step = steps_done_ + 1;
  auto it = tasks_.find(id);
  if (config_.secagg.enabled)
    return Reject(id, ErrorCode::kProtocolViolation,
                  "this run uses secure aggregation: updates are sent masked (SecAggMaskedInput)");
  if (!TakesAnotherStep(now)) {
    if (it != tasks_.end()) EndTask(it);
    return Reject(id, ErrorCode::kProtocolViolation, WhyNoMoreSteps());
  }
  if (it == tasks_.end()) {
    if (expired_.erase(id))
      return Reject(id, ErrorCode::kProtocolViolation, "late: its task's deadline passed");
    Miss(id, "sent an update for a task it does not hold", false);
    return Reject(id, ErrorCode::kProtocolViolation, "client holds no task");
  }
  // An answer to a task the client held before this one (its deadline passed, which counted its
  // miss, and it was dispatched again) is late; its current task stays open.
  const uint64_t task_id = it->second.dispatch + 1;
  if (u.task_id < task_id)
    return Reject(id, ErrorCode::kProtocolViolation,
                  fmt::format("late: the update answers an earlier task ({}); the client's task "
                              "is {}",
                              u.task_id, task_id));
  if (u.round != it->second.round || u.model_version != it->second.version || u.task_id != task_id)
    return Reject(id, ErrorCode::kProtocolViolation,
                  fmt::format("the update is for round {}, task {} and model version {}, but the "
                              "client's task is round {}, task {} on model version {}",
                              u.round, u.task_id, u.model_version, it->second.round, task_id,
                              it->second.version));
  const Task task = it->second;
  EndTask(it);  // the task is over, whatever the verdict
  summary_.bytes_up += u.update.bytes.size() + u.control_delta.size() * sizeof(float);
  const uint64_t staleness = version_ - task.version;
  std::string kind;  // the refusal's kind, for the streaks
  float scale = 1.0f;
  Status verdict = [&]() -> Status {
    if (now > task.deadline) {
      kind = "late";
      return Reject(id, ErrorCode::kProtocolViolation, "late: its task's deadline passed");
    }
    if (staleness > static_cast<uint64_t>(config_.async.max_staleness)) {
      kind = "stale";
      return Reject(id, ErrorCode::kProtocolViolation,
                    fmt::format("stale: trained on model version {}, {} versions behind the "
                                "current {}, more than run.max_staleness = {}",
                                task.version, staleness, version_, config_.async.max_staleness));
    }
    scale = weight_(staleness);
    const std::string what = "step " + std::to_string(step);
    if (!dp_) {
      // The staleness discount goes into the terms only: the normaliser stays sum(n_i).
      const uint64_t weight = config_.WeightOf(u.num_examples);  // run.max_weight, when set
      if (std::optional<UpdateRefusal> no =
              TakeUpdate(config_, *codec_, *strategy_, model_, id, registry_.Find(id), u, what,
                         weight, scale)) {
        kind = no->kind;
        return Reject(id, no->code, no->reason);
      }
      return Status::Ok();
    }
    std::variant<UpdateStats, UpdateRefusal> judged =
        CheckUpdateContent(config_, *codec_, model_, id, registry_.Find(id), u, what);
    if (const auto* no = std::get_if<UpdateRefusal>(&judged)) {
      kind = no->kind;
      return Reject(id, no->code, no->reason);
    }
    // No asynchronous rule uses control variates (CheckStrategyComposes): any delta is refused.
    if (std::optional<UpdateRefusal> no = CheckControlDelta(*strategy_, model_, u)) {
      kind = no->kind;
      return Reject(id, no->code, no->reason);
    }
    // Differential privacy: one clipped update per client per step (its sensitivity), summed with
    // weight 1; the strategy sees only the step's noised mean. The discount s(t) <= 1 is applied
    // before the clip, so it never raises the sensitivity.
    if (contributed_.count(id)) {
      kind = "duplicate";
      return Reject(
          id, ErrorCode::kProtocolViolation,
          "differential privacy: the client already contributed to step " + std::to_string(step));
    }
    const std::span<const uint8_t> bytes = u.update.bytes.span();
    Result<double> norm = dp_->AddUpdate(
        [&](UpdateSink& sink, float outer) { codec_->DecodeInto(bytes, sink, outer * scale); });
    if (!norm.ok()) {
      kind = "invalid values";
      return Reject(id, ErrorCode::kMalformedMessage, norm.status().message());
    }
    contributed_.insert(id);
    return Status::Ok();
  }();
  if (!verdict.ok()) {
    // A stale update's only fault is its speed: no cool-down for that. A late one missed its
    // deadline, and cools down as if the tick had expired its task first (timers run late).
    if (kind == "late")
      Miss(id, "sent no update by its task's deadline", false);
    else if (kind != "stale")
      Miss(id, "had its update refused (" + verdict.message() + ")", true);
    CountRefusal(id, kind == "stale" || kind == "late" ? "" : kind, verdict.message());
    CountMissedTask();
  } else {
    registry_.RecordGood(id);
    if (hooks_.on_accepted)
      hooks_.on_accepted(id, step, u.num_examples, u.update.bytes.size(),
                         UpdateStaleness{task.version, staleness, scale}, std::string());
    ++summary_.accepted;
    summary_.num_examples += u.num_examples;
    for (const auto& [k, v] : u.metrics)
      if (std::isfinite(v)) metric_sums_[k] += v * static_cast<double>(u.num_examples);
    if (ClientRecord* rec = registry_.Find(id)) ++rec->rounds_completed;
    ++histogram_[std::min<size_t>(staleness, histogram_.size() - 1)];
    staleness_sum_ += static_cast<double>(staleness);
    step_max_staleness_ = std::max(step_max_staleness_, staleness);
    same_count_ = 0;
    same_kind_.clear();
    same_clients_.clear();
    missed_tasks_ = 0;
    if (++buffered_ >= config_.BufferSize()) ApplyBuffer(now);
  }
  Fill(now);
  return verdict;
}

void AsyncEngine::CountRefusal(const std::string& id, const std::string& kind,
                               const std::string& reason) {
  if (kind.empty() || failed_) return;
  if (kind != same_kind_) {
    same_kind_ = kind;
    same_example_ = reason;
    same_count_ = 0;
    same_clients_.clear();
  }
  ++same_count_;
  same_clients_.insert(id);
  if (same_count_ >= kSameRefusalSteps * config_.BufferSize() &&
      same_clients_.size() >= kSameRefusalClients)
    Fail(Status::FailedPrecondition(fmt::format(
        "step {}: the last {} updates were all refused for the same reason ({}), from {} "
        "different clients, e.g. '{}'; going on cannot help",
        steps_done_ + 1, same_count_, same_kind_, same_clients_.size(), same_example_)));
}

void AsyncEngine::CountMissedTask() {
  ++missed_tasks_;
  if (failed_ || config_.max_round_attempts == 0) return;
  const int64_t limit = config_.max_round_attempts * config_.Concurrency();
  if (missed_tasks_ >= limit)
    Fail(Status::Unavailable(fmt::format(
        "step {}: the last {} tasks ended without an accepted update (run.max_round_attempts = {} "
        "x run.concurrency = {})",
        steps_done_ + 1, missed_tasks_, config_.max_round_attempts, config_.Concurrency())));
}

void AsyncEngine::Miss(const std::string& id, std::string_view why, bool refused) {
  RecordCoolDownMiss(registry_, id, why, steps_done_ + 1,
                     static_cast<uint64_t>(config_.cooldown_max_rounds), refused, "step");
}

Status AsyncEngine::OnEvaluateResult(const std::string& id, const EvaluateResult& res,
                                     TimePoint now) {
  registry_.Touch(id, now);
  return eval_->OnResult(id, res);
}

Status AsyncEngine::OnGroupResult(const std::string& aggregator, const GroupResult&,
                                  const PartialSum&, TimePoint) {
  return Status::FailedPrecondition(
      "aggregator '" + aggregator +
      "': asynchronous steps do not run through the aggregation tier");
}

Status AsyncEngine::OnSecureGroupResult(const std::string& aggregator, const GroupResult&,
                                        TimePoint) {
  return Status::FailedPrecondition(
      "aggregator '" + aggregator +
      "': asynchronous steps do not run through the aggregation tier");
}

Status AsyncEngine::OnSecAgg(const std::string& id, const Message& m, TimePoint now) {
  registry_.Touch(id, now);
  auto it = tasks_.find(id);
  Status s = it == tasks_.end() || it->second.cohort == 0
                 ? Status::FailedPrecondition(MessageTypeName(TypeOf(m)) +
                                              ": the client is in no secure aggregation cohort")
                 : FeedSecAgg(*cohorts_.at(it->second.cohort).session, id, m, now);
  if (!s.ok()) {
    outbox_.push_back(
        {id, Error{static_cast<uint32_t>(ErrorCode::kProtocolViolation), s.message()}});
    ++summary_.refused;
  }
  if (it != tasks_.end() && it->second.cohort != 0) AfterCohort(it->second.cohort, now);
  Fill(now);
  return s;
}

void AsyncEngine::OnTick(TimePoint now) {
  eval_->OnTick(now);
  std::vector<uint64_t> ids;
  for (auto& [id, c] : cohorts_) ids.push_back(id);
  for (uint64_t id : ids) {
    cohorts_.at(id).session->OnTick(now);
    AfterCohort(id, now);
  }
  Expire(now);
  Fill(now);
}

void AsyncEngine::Expire(TimePoint now) {
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    const std::string id = deadlines_.begin()->second;
    EndTask(tasks_.find(id));
    expired_.insert(id);
    ++summary_.dropped;
    Miss(id, "sent no update by its task's deadline", false);
    CountMissedTask();
  }
}

void AsyncEngine::StartCohort(const std::vector<std::string>& members, TimePoint now) {
  // The session's number: the first member's dispatch number + 1, unique since the run started or
  // resumed (the checkpoint keeps the counter of its step: numbers sent after it are reissued).
  const uint64_t id = dispatches_ + 1;
  const TimePoint deadline = now + config_.round_timeout;
  Result<SecAggRound::Options> o = SecAggOptionsFor(config_, registry_, members, model_, id);
  Result<std::unique_ptr<SecAggRound>> r = o.status();
  if (o.ok()) r = SecAggRound::Start(std::move(*o), members, now, deadline);
  if (!r.ok()) {
    Fail(
        r.status().WithContext("step " + std::to_string(steps_done_ + 1) + ": secure aggregation"));
    return;
  }
  Cohort& c = cohorts_[id];
  c.session = std::move(*r);
  c.version = version_;
  c.size = members.size();
  // Each client hears that its task is secure (SecAggStart) before the task.
  for (SecAggRound::Outgoing& m : c.session->TakeOutbox())
    outbox_.push_back({m.client_id, std::move(m.message)});
  const ModelPayload& payload = download_->For(model_, version_, steps_done_ + 1);
  for (const std::string& member : members) Dispatch(member, payload, now, id);
}

void AsyncEngine::AfterCohort(uint64_t id, TimePoint now) {
  auto it = cohorts_.find(id);
  if (it == cohorts_.end()) return;
  Cohort& c = it->second;
  for (SecAggRound::Outgoing& m : c.session->TakeOutbox())
    outbox_.push_back({m.client_id, std::move(m.message)});
  if (c.session->state() == SecAggRound::State::kRunning) return;
  // Members that went silent in a phase cool down, as a client whose task expires does.
  for (const SecAggRound::Silent& silent : c.session->TakeSilent())
    if (registry_.Find(silent.client_id))
      Miss(silent.client_id,
           fmt::format("sent nothing in phase '{}' of its cohort's secure aggregation",
                       silent.phase),
           false);
  // The cohort is over: its members' tasks end, whatever the outcome.
  std::vector<std::string> members;
  for (const auto& [client, task] : tasks_)
    if (task.cohort == id) members.push_back(client);
  for (const std::string& client : members) EndTask(tasks_.find(client));
  const uint64_t staleness = version_ - c.version;
  Status s = c.session->state() == SecAggRound::State::kFailed
                 ? c.session->failure()
                 : (staleness > static_cast<uint64_t>(config_.async.max_staleness)
                        ? Status::FailedPrecondition(fmt::format(
                              "stale: its sum was computed against model version {}, {} versions "
                              "behind, more than run.max_staleness = {}",
                              c.version, staleness, config_.async.max_staleness))
                        : Status::Ok());
  const float scale = weight_(staleness);
  const uint64_t weight = c.session->total_weight();
  summary_.bytes_up += c.session->masked_bytes_up() + c.session->protocol_bytes_up();
  summary_.bytes_down += c.session->protocol_bytes_down();
  if (s.ok() && !TakesAnotherStep(now)) {
    // A sum that comes after the run's last step (or its privacy budget) has no step to join;
    // its members did nothing wrong.
    Log().info("the secure aggregation cohort {} of {} clients came too late: {}", id, c.size,
               WhyNoMoreSteps());
    cohorts_.erase(it);
    return;
  }
  if (s.ok()) {
    // The cohort's unmasked sum is one contribution, with one staleness: its mean times the
    // integer total weight, discounted by s(t) in the terms only.
    s = strategy_->CheckUpdate(UpdateStats{LInfNorm(c.session->mean()), c.session->mean().size()},
                               weight);
    if (s.ok())
      s = strategy_->Accumulate(weight, SecAggMeanWriter(*c.session, model_.size(), scale));
  }
  if (!s.ok()) {
    Log().warn("step {}: the secure aggregation cohort {} of {} clients gave nothing: {}",
               steps_done_ + 1, id, c.size, s.message());
    summary_.dropped += static_cast<int64_t>(c.size);
    for (size_t i = 0; i < c.size; ++i) CountMissedTask();
    cohorts_.erase(it);
    return;
  }
  const int64_t survivors = static_cast<int64_t>(c.session->survivors().size());
  summary_.accepted += survivors;
  summary_.dropped += static_cast<int64_t>(c.size) - survivors;
  summary_.num_examples += weight;
  histogram_[std::min<size_t>(staleness, histogram_.size() - 1)] +=
      static_cast<uint64_t>(survivors);
  staleness_sum_ += static_cast<double>(staleness) * static_cast<double>(survivors);
  step_max_staleness_ = std::max(step_max_staleness_, staleness);
  for (const std::string& client : c.session->survivors()) registry_.RecordGood(client);
  missed_tasks_ = 0;
  buffered_ += survivors;
  cohorts_.erase(it);
  if (buffered_ >= config_.BufferSize()) ApplyBuffer(now);
}

bool AsyncEngine::TakesAnotherStep(TimePoint now) {
  if (failed_ || budget_spent_ || steps_done_ >= static_cast<uint64_t>(config_.rounds))
    return false;
  if (!buffer_open_) OpenBuffer(now);  // checks the privacy budget first
  return buffer_open_ && !failed_ && !budget_spent_;
}

std::string AsyncEngine::WhyNoMoreSteps() const {
  if (budget_spent_) return "late: the run has stopped (" + stop_reason_ + ")";
  if (failed_) return "late: the run has failed";
  return "late: the run has taken its last step";
}

void AsyncEngine::EndTask(std::map<std::string, Task>::iterator it) {
  deadlines_.erase({it->second.deadline, it->first});
  if (ClientRecord* r = registry_.Find(it->first)) registry_.Release(*r);
  tasks_.erase(it);
}

void AsyncEngine::Fill(TimePoint now) {
  if (failed_ || budget_spent_ || steps_done_ >= static_cast<uint64_t>(config_.rounds)) return;
  if (!started_) {
    if (static_cast<int64_t>(registry_.size()) < config_.min_available) return;
    started_ = true;
  }
  const size_t slots = static_cast<size_t>(config_.Concurrency());
  if (tasks_.size() >= slots || registry_.num_idle() == 0) return;
  if (!buffer_open_) OpenBuffer(now);
  if (failed_ || budget_spent_) return;
  if (config_.secagg.enabled) {
    // Secure aggregation: a cohort of run.clients_per_round clients at a time, dispatched
    // together, whenever that many slots are free.
    const size_t cohort = static_cast<size_t>(config_.clients_per_round);
    while (!failed_ && slots - tasks_.size() >= cohort && registry_.num_idle() >= cohort) {
      std::vector<std::string> members = Draw(cohort, /*cooling_fill=*/false);
      if (members.size() < cohort) return;
      StartCohort(members, now);
    }
    return;
  }
  std::vector<std::string> chosen = Draw(slots - tasks_.size(), /*cooling_fill=*/tasks_.empty());
  if (chosen.empty()) return;
  const ModelPayload& payload = download_->For(model_, version_, steps_done_ + 1);
  for (const std::string& id : chosen) Dispatch(id, payload, now, 0);
}

std::vector<std::string> AsyncEngine::Draw(size_t want, bool cooling_fill) {
  ClientRegistry::Pools pools = registry_.SelectionPools(steps_done_ + 1);
  Rng rng = Rng::Stream(config_.seed, {kAsyncSelectionStream, dispatches_});
  std::vector<std::string> chosen;
  for (std::vector<const std::string*>* pool : {&pools.clean, &pools.probation}) {
    if (chosen.size() >= want) break;
    rng.Shuffle(std::span<const std::string*>(*pool));
    for (const std::string* id : *pool) {
      if (chosen.size() >= want) break;
      if (contributed_.count(*id)) continue;  // differential privacy: once per step
      chosen.push_back(*id);
    }
  }
  // Everyone idle is cooling down and nobody trains: the earliest to come back takes a task rather
  // than the run stall.
  if (chosen.empty() && cooling_fill && !pools.cooling.empty())
    chosen.push_back(*pools.cooling.front());
  return chosen;
}

void AsyncEngine::Dispatch(const std::string& id, const ModelPayload& payload, TimePoint now,
                           uint64_t cohort) {
  const uint64_t dispatch = dispatches_++;
  TaskAssignment t;
  // A cohort's tasks carry its session's number (what the client matches its SecAggStart by).
  t.round = cohort != 0 ? cohort : steps_done_ + 1;
  t.task_id = dispatch + 1;
  t.model_version = version_;
  t.fit = config_.fit;
  t.fit.seed = DeriveSeed(config_.seed, {kAsyncFitSeedStream, dispatch, ClientIdHash(id)});
  // With secure aggregation the client sends its dense delta into the integer domain, which does
  // the codec's quantization and sparsification.
  t.codec.spec = cohort != 0 ? "dense" : std::string(codec_->spec());
  t.deadline_ms = static_cast<uint64_t>(config_.round_timeout.count());
  t.model = payload;  // shares the version's one copy
  Task task{dispatch, t.round, version_, now + config_.round_timeout, cohort};
  ClientRecord& client = *registry_.Find(id);
  const uint64_t frozen_bytes = StampFrozen(config_, client, t.frozen);
  registry_.MarkBusy(client);
  expired_.erase(id);
  tasks_[id] = task;
  // A cohort's deadlines are its session's.
  if (cohort == 0) deadlines_.insert({task.deadline, id});
  ++summary_.selected;
  summary_.bytes_down += t.model.data_bytes() + frozen_bytes;
  outbox_.push_back({id, std::move(t)});
}

void AsyncEngine::OpenBuffer(TimePoint now) {
  if (dp_ && config_.dp.target_epsilon > 0.0) {
    // Every step is charged at sampling rate 1 (no amplification: asynchronous participation is
    // not uniform sampling); the run stops before the step that would pass the budget.
    const PrivacySpent next = dp_->SpentWithOneMore(1.0);
    if (next.epsilon > config_.dp.target_epsilon) {
      budget_spent_ = true;
      stop_reason_ = fmt::format(
          "differential privacy: the run stops before step {}: it would spend epsilon {:.4g} "
          "(delta {:.3g}), over dp.target_epsilon = {}; {} steps spent epsilon {:.4g}",
          steps_done_ + 1, next.epsilon, dp_->delta(), config_.dp.target_epsilon,
          dp_->rounds_charged(), dp_->Spent().epsilon);
      Log().warn("{}", stop_reason_);
      return;
    }
  }
  if (Status begun = strategy_->BeginRound(model_); !begun.ok()) {
    Fail(begun.WithContext("step " + std::to_string(steps_done_ + 1) +
                           ": the strategy cannot begin"));
    return;
  }
  if (dp_) dp_->BeginRound(model_.size());
  contributed_.clear();
  buffered_ = 0;
  buffer_open_ = true;
  step_start_ = now;
  const int64_t carried_dropped = summary_.dropped;  // tasks lost before the buffer opened
  summary_ = RoundSummary{};
  summary_.round = steps_done_ + 1;
  summary_.attempts = 1;
  summary_.dropped = carried_dropped;
  metric_sums_.clear();
  histogram_.assign(
      static_cast<size_t>(std::min<int64_t>(config_.async.max_staleness, kHistogramTop)) + 1, 0);
  staleness_sum_ = 0.0;
  step_max_staleness_ = 0;
  if (hooks_.on_round_opened)
    hooks_.on_round_opened(summary_.round, 1, static_cast<int64_t>(tasks_.size()));
}

void AsyncEngine::ApplyBuffer(TimePoint now) {
  if (dp_) {
    Result<std::vector<float>> mean = dp_->Release(steps_done_ + 1, 1.0);
    Status s = mean.status();
    if (s.ok()) s = strategy_->CheckUpdate(UpdateStats{LInfNorm(*mean), mean->size()}, 1);
    if (s.ok())
      s = strategy_->Accumulate(
          1, [&](UpdateSink& sink, float outer) { sink.AddDense(0, *mean, outer); });
    if (!s.ok()) {
      Fail(s.WithContext("step " + std::to_string(steps_done_ + 1) + ": differential privacy"));
      return;
    }
    summary_.dp = dp_->last_round();
  }
  Result<ModelWeights> next = strategy_->Finalize();
  if (!next.ok()) {
    Fail(next.status().WithContext("step " + std::to_string(steps_done_ + 1)));
    return;
  }
  if (std::string where = FirstNonFinite(*next); !where.empty()) {
    Fail(Status::FailedPrecondition(fmt::format(
        "step {}: the aggregated model holds {}; the run stops rather than send it to clients",
        steps_done_ + 1, where)));
    return;
  }
  model_ = std::move(next).value();
  ++version_;
  ++steps_done_;
  registry_.SetRound(steps_done_ + 1);
  buffer_open_ = false;
  summary_.model_version = version_;
  summary_.duration_s = SecondsBetween(step_start_, now);
  for (const auto& [k, v] : metric_sums_)
    summary_.client_metrics[k] =
        v / static_cast<double>(std::max<uint64_t>(1, summary_.num_examples));
  StalenessSummary st;
  st.histogram = histogram_;
  st.in_flight = static_cast<int64_t>(tasks_.size());
  st.max = step_max_staleness_;
  st.mean = summary_.accepted > 0 ? staleness_sum_ / static_cast<double>(summary_.accepted) : 0.0;
  summary_.staleness = std::move(st);
  if (config_.federated_eval_every > 0 &&
      steps_done_ % static_cast<uint64_t>(config_.federated_eval_every) == 0) {
    EvaluateTask task;
    task.round = summary_.round;
    task.model_version = version_;
    task.deadline_ms = static_cast<uint64_t>(config_.round_timeout.count());
    task.model = download_->For(model_, version_, summary_.round);
    eval_->Start(task, registry_.Eligible(), now + config_.round_timeout, outbox_,
                 [this](const std::string& id, EvaluateTask& t) {
                   StampFrozen(config_, *registry_.Find(id), t.frozen);
                 });
  }
  const RoundSummary done = summary_;
  summary_ = RoundSummary{};
  if (hooks_.on_round_complete) hooks_.on_round_complete(done, model_);
  if (steps_done_ < static_cast<uint64_t>(config_.rounds)) OpenBuffer(now);
}

void AsyncEngine::Fail(Status why) {
  if (failed_) return;
  failed_ = true;
  failure_ = std::move(why);
  Log().error("{}", failure_.message());
}

std::vector<RunEngine::Outgoing> AsyncEngine::TakeOutbox() {
  std::vector<Outgoing> out;
  out.swap(outbox_);
  return out;
}

std::optional<TimePoint> AsyncEngine::next_wakeup() const {
  std::optional<TimePoint> wake;
  if (!deadlines_.empty()) wake = deadlines_.begin()->first;
  for (const auto& [id, c] : cohorts_)
    if (std::optional<TimePoint> d = c.session->next_deadline(); d && (!wake || *d < *wake))
      wake = d;
  if (std::optional<TimePoint> e = eval_->deadline(); e && (!wake || *e < *wake)) wake = e;
  return wake;
}

}  // namespace tributary
