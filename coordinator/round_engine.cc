#include "coordinator/round_engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "compression/codec_spec.h"
#include "compression/l2_clip.h"
#include "coordinator/engine_parts.h"
#include "coordinator/secagg_cohort.h"
#include "coordinator/update_check.h"
#include "core/check.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/rng.h"
#include "protocol/task_failed_text.h"

namespace tributary {
namespace {

constexpr uint64_t kSelectionStream = 0x5e1ec7;
constexpr uint64_t kFitSeedStream = 0xf17;
constexpr uint64_t kPaceStream = 0x9ace;

}  // namespace

Result<std::unique_ptr<RoundEngine>> RoundEngine::Create(RoundConfig config,
                                                         std::unique_ptr<Strategy> strategy,
                                                         ModelWeights initial, uint64_t rounds_done,
                                                         uint64_t model_version, Hooks hooks,
                                                         uint64_t dispatches) {
  TRIB_RETURN_IF_ERROR(config.Validate());
  if (!strategy) return Status::InvalidArgument("round engine: no strategy");
  TRIB_RETURN_IF_ERROR(CheckStrategyComposes(*strategy, config));
  if (initial.size() == 0)
    return Status::InvalidArgument("round engine: the initial model is empty");
  TRIB_ASSIGN_OR_RETURN(std::unique_ptr<Codec> codec, MakeCodec(config.codec));
  TRIB_ASSIGN_OR_RETURN(std::unique_ptr<Codec> download_codec,
                        MakeDownloadCodec(config.download_codec));
  std::unique_ptr<RoundEngine> e(new RoundEngine());
  e->download_ = std::make_unique<DownloadCache>(std::move(download_codec), config.seed);
  e->config_ = std::move(config);
  e->strategy_ = std::move(strategy);
  e->codec_ = std::move(codec);
  e->model_ = std::move(initial);
  e->rounds_done_ = rounds_done;
  e->first_round_ = rounds_done + 1;
  e->version_ = model_version;
  e->registry_.SetRound(rounds_done + 1);
  e->hooks_ = std::move(hooks);
  e->eval_ =
      std::make_unique<FederatedEval>(e->hooks_.on_federated_eval, e->config_.max_num_examples);
  e->dispatches_ = dispatches;
  if (e->config_.dp.enabled) {
    TRIB_ASSIGN_OR_RETURN(e->dp_,
                          DpAggregator::Create(e->config_.dp, e->config_.clients_per_round));
  }
  return e;
}

int64_t RoundEngine::DpFewestInputs() const {
  return std::max<int64_t>({1, MinCompleted(), config_.secagg.min_clients});
}

bool RoundEngine::PoissonSampling() const {
  return dp_ && config_.dp.sampling_mode() == DpSampling::kPoisson;
}

int64_t RoundEngine::MinCompleted() const {
  if (PoissonSampling())  // the round's sample, whatever its size
    return config_.min_completed > 0 ? std::min(config_.min_completed, summary_.selected)
                                     : summary_.selected;
  return config_.min_completed > 0 ? config_.min_completed : TargetUpdates();
}

int64_t RoundEngine::TargetUpdates() const {
  if (PoissonSampling()) return summary_.selected;
  if (config_.fraction > 0.0) {
    // Fixed when the attempt began: clients joining or leaving (pace steering sends idle ones
    // away) must not move the round's target while it runs.
    if (in_round_) return attempt_target_;
    return std::max<int64_t>(1,
                             static_cast<int64_t>(std::ceil(config_.fraction * registry_.size())));
  }
  return config_.clients_per_round;
}

void RoundEngine::OnJoined(const std::string& id, const ClientCapabilities& caps, TimePoint now,
                           const std::string& via) {
  // A reconnect during a round forfeits the old session's task.
  if (in_round_ && assigned_.erase(id)) {
    answered_.insert(id);
    ++summary_.dropped;
  }
  registry_.Join(id, caps, now, via);
  if (in_round_ && answered_.count(id))
    registry_.MarkBusy(*registry_.Find(id));  // no second task this attempt
  MaybeFinishEarly(now);
  MaybeStartRound(now);
}

void RoundEngine::OnLeft(const std::string& id, TimePoint now) {
  registry_.Leave(id);
  if (SecureRound()) {
    if (in_round_ && assigned_.erase(id)) ++summary_.dropped;
    if (tier_secagg_) tier_secagg_->OnLeft(id);
    if (secagg_) {
      secagg_->OnLeft(id, now);
      AfterSecAgg(now);
    } else {
      AfterTierSecAgg(now);
    }
    eval_->OnLeft(id);
    return;
  }
  if (in_round_ && assigned_.erase(id)) {
    answered_.insert(id);
    ++summary_.dropped;
    MaybeFinishEarly(now);
  }
  eval_->OnLeft(id);
}

Status RoundEngine::OnTaskFailed(const std::string& id, const TaskFailed& f, TimePoint now) {
  registry_.Touch(id, now);
  if (f.evaluate()) return eval_->OnFailed(id, f.round);
  const uint64_t round = rounds_done_ + 1;
  if (!f.fit() || !in_round_ || f.round != round || f.task_id != AttemptTaskId() ||
      !assigned_.count(id))
    return Status::FailedPrecondition(
        fmt::format("it holds no task {} of round {} (round {} attempt {} is {})", f.task_id,
                    f.round, round, AttemptTaskId(), in_round_ ? "open" : "not open yet"));
  assigned_.erase(id);
  CountFailedTask(id);
  if (SecureRound()) {
    // Its session goes on without its masked input: a dropout, unmasked as any other.
    if (secagg_) {
      secagg_->OnNoInput(id, now);
      AfterSecAgg(now);
    } else {
      AfterTierSecAgg(now);
    }
    return Status::Ok();
  }
  answered_.insert(id);
  MaybeFinishEarly(now);
  return Status::Ok();
}

Status RoundEngine::Reject(const std::string& id, uint64_t round, ErrorCode code,
                           std::string_view kind, const std::string& reason) {
  outbox_.push_back({id, Error{static_cast<uint32_t>(code), "update refused: " + reason}});
  return Charge(id, round, code, kind, reason);
}

Status RoundEngine::Charge(const std::string& id, uint64_t round, ErrorCode code,
                           std::string_view kind, const std::string& reason) {
  Status why = code == ErrorCode::kMalformedMessage ? Status::InvalidArgument(reason)
                                                    : Status::FailedPrecondition(reason);
  // Only a refusal charged to the open round is this attempt's: a late update for an earlier round
  // (a slow client's, arriving after its round closed) says nothing about this attempt, and must
  // not make it look refused alike.
  if (in_round_ && round == rounds_done_ + 1) {
    ++summary_.refused;
    // The same-refusal streak weighs only verdicts on assigned clients' updates, late ones aside.
    if (judging_ && kind != "late") {
      attempt_refused_clients_.insert(id);
      if (attempt_refusals_.emplace(kind).second && attempt_refusals_.size() == 1)
        attempt_refusal_example_ = reason;
    }
  }
  if (hooks_.on_refused) hooks_.on_refused(id, round, why);
  return why;
}

void RoundEngine::CountAccepted(const std::string& id, uint64_t round, uint64_t num_examples,
                                uint64_t bytes, const WireMetrics& metrics,
                                const std::string& via) {
  registry_.RecordGood(id);
  if (hooks_.on_accepted) hooks_.on_accepted(id, round, num_examples, bytes, std::nullopt, via);
  ++summary_.accepted;
  summary_.num_examples += num_examples;
  for (const auto& [k, v] : metrics)
    if (std::isfinite(v)) metric_sums_[k] += v * static_cast<double>(num_examples);
  if (ClientRecord* rec = registry_.Find(id)) ++rec->rounds_completed;
}

Status RoundEngine::OnUpdate(const std::string& id, const UpdateSubmission& u, TimePoint now) {
  registry_.Touch(id, now);
  const uint64_t round = rounds_done_ + 1;
  const std::string r = "round " + std::to_string(u.round);
  // A refusal is charged to the open round, except a late update's: that one is its own round's
  // (which is closed), so it counts in none of this attempt's numbers.
  const uint64_t charged = std::min(u.round, round);
  // An update for a later round is early whether or not a round is open (between rounds it used
  // to be called late, and escaped its cool-down). One for this round between its attempts is
  // late: it may come from the failed attempt.
  if (u.round > round) {
    Miss(id, "sent an update for " + r + ", which has not started", false);
    return Reject(id, charged, ErrorCode::kProtocolViolation, "early", r + " has not started");
  }
  if (u.round < round)
    return Reject(id, charged, ErrorCode::kProtocolViolation, "late", "late: " + r + " is closed");
  if (!in_round_)  // the round failed an attempt and waits for its retry
    return Reject(id, charged, ErrorCode::kProtocolViolation, "late",
                  "late: " + r + "'s attempt has ended (the round is retried)");
  if (SecureRound())
    return Reject(id, charged, ErrorCode::kProtocolViolation, "secure aggregation",
                  r + " uses secure aggregation: updates are sent masked (SecAggMaskedInput)");
  // An answer to an earlier attempt's task (a slow client's, whose attempt failed) is late: it is
  // neither this attempt's update nor a fault of its sender (its miss was counted when that attempt
  // failed), and the client's task in this attempt, if it holds one, stays open.
  if (u.task_id < AttemptTaskId())
    return Reject(id, charged, ErrorCode::kProtocolViolation, "late",
                  fmt::format("late: the update answers attempt {} of {}, which failed (attempt {} "
                              "is open)",
                              u.task_id, r, AttemptTaskId()));
  if (u.task_id > AttemptTaskId()) {
    Miss(id,
         fmt::format("sent an update for attempt {} of {}, which has not started", u.task_id, r),
         false);
    return Reject(id, charged, ErrorCode::kProtocolViolation, "early",
                  fmt::format("attempt {} of {} has not started", u.task_id, r));
  }
  if (answered_.count(id))
    return Reject(id, charged, ErrorCode::kProtocolViolation, "duplicate",
                  "duplicate update for " + r);
  if (!assigned_.count(id)) {
    Miss(id, "sent an update for " + r + ", which it was not assigned", false);
    return Reject(id, charged, ErrorCode::kProtocolViolation, "not assigned",
                  "client was not assigned " + r);
  }
  // From here on the client's slot in this round is used up, whatever the verdict.
  assigned_.erase(id);
  answered_.insert(id);
  summary_.bytes_up += u.update.bytes.size() + u.control_delta.size() * sizeof(float);
  judging_ = true;
  Status verdict = [&]() -> Status {
    if (now > deadline_)
      return Reject(id, charged, ErrorCode::kProtocolViolation, "late",
                    "late: the deadline of " + r + " passed");
    if (u.model_version != version_)
      return Reject(id, charged, ErrorCode::kProtocolViolation, "old model version",
                    "trained on model version " + std::to_string(u.model_version) +
                        ", current is " + std::to_string(version_));
    if (!dp_) {
      const uint64_t weight = config_.WeightOf(u.num_examples);  // run.max_weight, when set
      if (std::optional<UpdateRefusal> no = TakeUpdate(config_, *codec_, *strategy_, model_, id,
                                                       registry_.Find(id), u, r, weight))
        return Reject(id, charged, no->code, no->kind, no->reason);
      return Status::Ok();
    }
    std::variant<UpdateStats, UpdateRefusal> judged =
        CheckUpdateContent(config_, *codec_, model_, id, registry_.Find(id), u, r);
    if (const auto* no = std::get_if<UpdateRefusal>(&judged))
      return Reject(id, charged, no->code, no->kind, no->reason);
    // Differential privacy: clipped and summed with weight 1; the strategy sees only the noised
    // mean.
    const std::span<const uint8_t> encoded = u.update.bytes.span();
    Result<double> norm = dp_->AddUpdate(
        [&](UpdateSink& sink, float scale) { codec_->DecodeInto(encoded, sink, scale); });
    if (!norm.ok())
      return Reject(id, charged, ErrorCode::kMalformedMessage, "invalid values",
                    norm.status().message());
    return Status::Ok();
  }();
  judging_ = false;
  if (!verdict.ok())
    Miss(id, "had its update refused (" + verdict.message() + ")",
         attempt_refused_clients_.count(id) > 0);
  if (verdict.ok())
    CountAccepted(id, u.round, u.num_examples,
                  u.update.bytes.size() + u.control_delta.size() * sizeof(float), u.metrics);
  MaybeFinishEarly(now);
  return verdict;
}

Status RoundEngine::OnGroupResult(const std::string& aggregator, const GroupResult& g,
                                  const PartialSum& partial, TimePoint now) {
  const uint64_t round = rounds_done_ + 1;
  const std::string who = "aggregator '" + aggregator + "'";
  const std::string r = "round " + std::to_string(g.round);
  // The whole result is judged before any of it counts: nothing changes when it is refused.
  if (!in_round_ || g.round != round)
    return Status::FailedPrecondition(
        who + ": a partial sum for " + r + ", which is not open" +
        (in_round_ ? " (round " + std::to_string(round) + " is)" : ""));
  if (g.task_id != AttemptTaskId())
    return Status::FailedPrecondition(
        fmt::format("{}: a partial sum for attempt {} of {}, but attempt {} is open", who,
                    g.task_id, r, AttemptTaskId()));
  if (SecureRound() || dp_)
    return Status::FailedPrecondition(who + ": " + r +
                                      " uses secure aggregation or differential privacy");
  if (g.model_version != version_)
    return Status::FailedPrecondition(who + ": a partial sum on model version " +
                                      std::to_string(g.model_version) + ", current is " +
                                      std::to_string(version_));
  uint64_t count = 0, total_weight = 0;
  std::set<std::string_view> seen;
  for (const GroupRecord& rec : g.records) {
    if (!seen.insert(rec.client_id).second)
      return Status::InvalidArgument(who + ": client '" + rec.client_id +
                                     "' has two records in one result");
    if (!assigned_.count(rec.client_id))
      return Status::FailedPrecondition(
          who + ": client '" + rec.client_id + "' holds no task of " + r +
          (answered_.count(rec.client_id) ? " (it has answered already)" : ""));
    if (!rec.accepted()) continue;
    if (rec.weight != config_.WeightOf(rec.num_examples))
      return Status::InvalidArgument(fmt::format(
          "{}: client '{}' weighs {} in the partial sum, but {} examples weigh {} in this run", who,
          rec.client_id, rec.weight, rec.num_examples, config_.WeightOf(rec.num_examples)));
    const ClientRecord* sender = registry_.Find(rec.client_id);
    const uint64_t most =
        config_.MaxExamplesOf(sender ? sender->capabilities.num_examples : uint64_t{0});
    if (rec.num_examples < std::max<uint64_t>(1, config_.min_num_examples) ||
        rec.num_examples > most)
      return Status::InvalidArgument(
          fmt::format("{}: client '{}' reports {} examples, outside this run's bounds", who,
                      rec.client_id, rec.num_examples));
    ++count;
    total_weight += rec.weight;
  }
  if (partial.count != count || partial.total_weight != total_weight)
    return Status::InvalidArgument(
        fmt::format("{}: the partial sum holds {} updates of total weight {}, but its records "
                    "accept {} of total weight {}",
                    who, partial.count, partial.total_weight, count, total_weight));
  if (count > 0) {
    if (Status merged = strategy_->MergePartialSum(partial); !merged.ok())
      return merged.WithContext(who);
  }
  for (const GroupRecord& rec : g.records) {
    assigned_.erase(rec.client_id);
    answered_.insert(rec.client_id);
    summary_.bytes_up += rec.bytes_up;
    if (rec.accepted()) {
      CountAccepted(rec.client_id, g.round, rec.num_examples, rec.bytes_up, rec.metrics,
                    aggregator);
      continue;
    }
    if (rec.code == static_cast<uint32_t>(ErrorCode::kTaskFailed)) {
      // The client told its aggregator that it could not do the task: not a refusal (OnTaskFailed).
      Log().warn("client '{}' (via {}) could not do its task of round {}: {}", rec.client_id, who,
                 g.round, CutForLog(rec.reason));
      CountFailedTask(rec.client_id);
      continue;
    }
    judging_ = true;
    const Status why = Charge(rec.client_id, round, static_cast<ErrorCode>(rec.code), rec.kind,
                              "via " + who + ": " + rec.reason);
    judging_ = false;
    Miss(rec.client_id, "had its update refused (" + why.message() + ")",
         attempt_refused_clients_.count(rec.client_id) > 0);
  }
  MaybeFinishEarly(now);
  return Status::Ok();
}

Status RoundEngine::OnSecureGroupResult(const std::string& aggregator, const GroupResult& g,
                                        TimePoint now) {
  const uint64_t round = rounds_done_ + 1;
  const std::string who = "aggregator '" + aggregator + "'";
  if (!in_round_ || g.round != round || !tier_secagg_)
    return Status::FailedPrecondition(who + ": a secure sum for round " + std::to_string(g.round) +
                                      ", which is not open with secure aggregation through the "
                                      "tier");
  if (g.task_id != AttemptTaskId())
    return Status::FailedPrecondition(
        fmt::format("{}: a secure sum for attempt {} of round {}, but attempt {} is open", who,
                    g.task_id, g.round, AttemptTaskId()));
  if (g.model_version != version_)
    return Status::FailedPrecondition(who + ": a secure sum on model version " +
                                      std::to_string(g.model_version) + ", current is " +
                                      std::to_string(version_));
  TRIB_RETURN_IF_ERROR(tier_secagg_->OnResult(aggregator, g, now));
  for (const GroupRecord& rec : g.records) {
    assigned_.erase(rec.client_id);
    answered_.insert(rec.client_id);
    summary_.bytes_up += rec.bytes_up;
  }
  // Members whose input the group's sum does not hold went silent in their aggregator's session
  // (or were refused there): they cool down, as a client silent in this coordinator's own session
  // does (AfterSecAgg).
  for (const std::string& id : tier_secagg_->Absent(aggregator)) {
    if (!assigned_.erase(id) || !registry_.Find(id)) continue;
    answered_.insert(id);
    Miss(id, fmt::format("sent aggregator '{}' no masked input its secure sum holds", aggregator),
         false);
  }
  if (!g.secagg_failure.empty())
    Log().warn("round {}: the secure aggregation of aggregator {}'s group failed: {}", g.round,
               aggregator, g.secagg_failure);
  AfterTierSecAgg(now);
  return Status::Ok();
}

Status RoundEngine::OnEvaluateResult(const std::string& id, const EvaluateResult& res,
                                     TimePoint now) {
  registry_.Touch(id, now);
  return eval_->OnResult(id, res);
}

void RoundEngine::OnTick(TimePoint now) {
  eval_->OnTick(now);
  if (in_round_ && SecureRound()) {
    if (secagg_) {
      secagg_->OnTick(now);
      AfterSecAgg(now);
    }
    if (in_round_ && tier_secagg_) AfterTierSecAgg(now);
  } else if (in_round_ && now >= deadline_) {
    for (const std::string& id : assigned_) Miss(id, "sent no update by the deadline", false);
    summary_.dropped += static_cast<int64_t>(assigned_.size());
    answered_.insert(assigned_.begin(), assigned_.end());
    assigned_.clear();
    if (summary_.accepted >= MinCompleted()) {
      CloseRound(now);
    } else {
      FailAttempt(now, "deadline passed with " + std::to_string(summary_.accepted) + " of the " +
                           std::to_string(MinCompleted()) + " updates needed");
    }
  }
  MaybeStartRound(now);
}

void RoundEngine::MaybeFinishEarly(TimePoint now) {
  if (!in_round_ || SecureRound()) return;  // secure aggregation's phases decide for themselves
  const int64_t outstanding = static_cast<int64_t>(assigned_.size());
  if (summary_.accepted >= TargetUpdates() ||
      (outstanding == 0 && summary_.accepted >= MinCompleted())) {
    CloseRound(now);
    MaybeStartRound(now);
  } else if (summary_.accepted + outstanding < MinCompleted()) {
    FailAttempt(now, "only " + std::to_string(summary_.accepted + outstanding) +
                         " selected clients remain, fewer than min_completed " +
                         std::to_string(MinCompleted()));
    MaybeStartRound(now);
  }
}

void RoundEngine::CountFailedTask(const std::string& id) {
  ++summary_.dropped;
  Miss(id, "reported that its task failed", false);
}

void RoundEngine::Miss(const std::string& id, std::string_view why, bool refused) {
  RecordCoolDownMiss(registry_, id, why, rounds_done_ + 1,
                     static_cast<uint64_t>(config_.cooldown_max_rounds), refused, "round");
}

std::vector<std::string> RoundEngine::Select(uint64_t round) {
  // Shuffle pointers to the ids, not the strings: the same permutation (Shuffle draws the same
  // numbers for any element type) at a fraction of the cost over a million-client registry.
  // Clients with a miss on record are not in the main pool (ClientRegistry::RecordMiss); with none
  // on record, the pool and the draws are what they were before selection learned.
  ClientRegistry::Pools pools = registry_.SelectionPools(round);
  std::vector<const std::string*>& pool = pools.clean;
  Rng rng = Rng::Stream(config_.seed, {kSelectionStream, round, static_cast<uint64_t>(attempt_)});
  std::vector<std::string> chosen;
  if (PoissonSampling()) {
    // Each idle client independently, as the accountant assumes (a client that is not connected,
    // or cooling down, is not in the sample, which only lowers its chance).
    if (!pools.probation.empty()) {
      std::vector<const std::string*> all;
      std::merge(pool.begin(), pool.end(), pools.probation.begin(), pools.probation.end(),
                 std::back_inserter(all),
                 [](const std::string* a, const std::string* b) { return *a < *b; });
      pool.swap(all);
    }
    round_q_ =
        static_cast<double>(config_.clients_per_round) / static_cast<double>(config_.dp.population);
    for (const std::string* id : pool)
      if (rng.Uniform() < round_q_) chosen.push_back(*id);
  } else {
    const size_t want = static_cast<size_t>(
        std::ceil(static_cast<double>(TargetUpdates()) * config_.over_selection));
    const size_t m = std::min<size_t>(pool.size(), want);
    rng.Shuffle(std::span<const std::string*>(pool));
    chosen.reserve(m);
    for (size_t i = 0; i < m; ++i) chosen.push_back(*pool[i]);
    size_t considered = pool.size();
    // Clients on probation (a cool-down over, no good answer since) fill what the clean pool
    // lacks, and a few ride along beyond it (a tenth of the selection, at least one): the round
    // closes at its target without waiting for them, and an accepted update clears their record.
    if (!pools.probation.empty()) {
      rng.Shuffle(std::span<const std::string*>(pools.probation));
      const size_t extra = std::max<size_t>(1, (want + 9) / 10);
      const size_t upto = chosen.size() < want ? want : chosen.size() + extra;
      for (const std::string* id : pools.probation) {
        if (chosen.size() >= upto) break;
        chosen.push_back(*id);
      }
      considered += pools.probation.size();
    }
    // Still too few for what the round needs to start: cooling clients fill it, the earliest to
    // come back first, rather than the run stall. Not one refused in this round when it is the
    // only client refused in it: a lone refused client would only burn the round's attempts, so
    // the round waits for others instead.
    const size_t fill = std::min<size_t>(
        want, static_cast<size_t>(std::max<int64_t>({1, config_.min_available, MinCompleted()})));
    const bool refused_may_fill =
        std::count_if(registry_.cooldowns().begin(), registry_.cooldowns().end(), [&](auto& c) {
          return c.second.refused_in == round;
        }) >= static_cast<std::ptrdiff_t>(kSameRefusalClients);
    for (const std::string* id : pools.cooling) {
      if (chosen.size() >= fill) break;
      if (!refused_may_fill && registry_.cooldowns().find(*id)->second.refused_in == round)
        continue;
      chosen.push_back(*id);
      ++considered;
    }
    round_q_ = considered == 0
                   ? 0.0
                   : static_cast<double>(chosen.size()) / static_cast<double>(considered);
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

void RoundEngine::MaybeStartRound(TimePoint now) {
  if (in_round_ || failed_ || budget_spent_ ||
      rounds_done_ >= static_cast<uint64_t>(config_.rounds))
    return;
  const int64_t need =
      PoissonSampling() ? config_.min_available : std::max(config_.min_available, MinCompleted());
  const uint64_t round = rounds_done_ + 1;
  if (static_cast<int64_t>(registry_.num_idle()) < need) {
    // The first round's first attempt (of this process: a resumed run's too) says so only before
    // anyone has joined (a coordinator just started): a fleet, or a simulator registering its
    // clients, joins one by one meanwhile.
    const bool joining = round == first_round_ && attempt_ == 0 && registry_.size() > 0;
    if (!joining && wait_logged_ != std::pair(round, attempt_)) {
      wait_logged_ = std::pair(round, attempt_);
      Log().info(
          "round {}{}: waiting for {} idle clients ({} connected, {} idle; "
          "run.min_available = {}, run.min_completed = {})",
          round, attempt_ > 0 ? fmt::format(" attempt {}", attempt_ + 1) : "", need,
          registry_.size(), registry_.num_idle(), config_.min_available, MinCompleted());
    }
    return;
  }
  std::vector<std::string> eligible = Select(round);
  const size_t m = eligible.size();
  // Too few to reach the round's minimum without a client refused in it (the streak spans that
  // one client): wait for others rather than spend the attempts on an attempt that cannot succeed.
  if (!PoissonSampling() && static_cast<int64_t>(m) < std::max<int64_t>(1, MinCompleted())) return;
  if (dp_ && config_.dp.target_epsilon > 0.0) {
    const PrivacySpent next = dp_->SpentWithOneMore(round_q_);
    if (next.epsilon > config_.dp.target_epsilon) {
      const PrivacySpent now_spent = dp_->Spent();
      budget_spent_ = true;
      stop_reason_ = fmt::format(
          "differential privacy: the run stops before round {}: it would spend epsilon {:.4g} "
          "(delta {:.3g}), over dp.target_epsilon = {}; {} rounds spent epsilon {:.4g}",
          round, next.epsilon, dp_->delta(), config_.dp.target_epsilon, dp_->rounds_charged(),
          now_spent.epsilon);
      Log().warn("{}", stop_reason_);
      return;
    }
  }

  if (Status begun = strategy_->BeginRound(model_); !begun.ok()) {
    // Nothing a retry could change (the strategy's state does not fit the model): end the run.
    failed_ = true;
    failure_ = begun.WithContext("round " + std::to_string(round) + ": the strategy cannot begin");
    Log().error("{}", failure_.ToString());
    return;
  }
  if (dp_) dp_->BeginRound(model_.size());
  attempt_target_ = TargetUpdates();
  in_round_ = true;
  attempt_refusals_.clear();
  attempt_refused_clients_.clear();
  round_start_ = now;
  deadline_ = now + config_.round_timeout;
  assigned_ = std::set<std::string>(eligible.begin(), eligible.end());
  answered_.clear();
  metric_sums_.clear();
  summary_ = RoundSummary{};
  summary_.round = round;
  summary_.selected = static_cast<int64_t>(m);
  summary_.attempts = attempt_ + 1;

  // With secure aggregation each client hears that its round is secure before its task.
  if (config_.secagg.enabled && !StartSecAgg(eligible, round, now)) return;

  TaskAssignment task;
  task.round = round;
  task.task_id = AttemptTaskId();
  task.model_version = version_;
  task.fit = config_.fit;  // fit.seed is set per client below
  // With secure aggregation the client sends its dense delta into the integer domain, which does
  // the codec's quantization and sparsification (StartSecAgg).
  task.codec.spec = config_.secagg.enabled ? "dense" : std::string(codec_->spec());
  task.deadline_ms = static_cast<uint64_t>(config_.round_timeout.count());
  if (config_.split.enabled()) {
    task.split_cut = config_.split_cut;
    task.split_head = config_.split_head;
    task.split_codec.spec = config_.split.codec;
  }
  // One copy of the model, shared by every assignment; and of SCAFFOLD's control variate.
  task.model = download_->For(model_, version_, round);
  if (strategy_->uses_control_variates()) {
    const std::span<const float> c = strategy_->server_control();
    task.control = SharedFloats(std::vector<float>(c.begin(), c.end()));
  }
  for (const std::string& id : eligible) {
    registry_.MarkBusy(*registry_.Find(id));
    ++dispatches_;
    TaskAssignment t = task;  // shares task.model's floats
    t.fit.seed = DeriveSeed(config_.seed, {kFitSeedStream, round, ClientIdHash(id)});
    summary_.bytes_down += t.model.data_bytes() + t.control.size() * sizeof(float) +
                           StampFrozen(config_, *registry_.Find(id), t.frozen);
    outbox_.push_back({id, std::move(t)});
  }
  if (hooks_.on_round_opened) hooks_.on_round_opened(round, attempt_ + 1, summary_.selected);
  PaceIdle(round, now);
  // A Poisson sample may be empty: the round then releases noise alone, as the accounting assumes.
  if (m == 0 && !SecureRound()) MaybeFinishEarly(now);
}

void RoundEngine::PaceIdle(uint64_t round, TimePoint now) {
  if (config_.pace_max_idle <= 0) return;
  pace_cycle_.OnRoundStart(round, now);
  // The idle clients connected here (an aggregator's are its own to keep), in id order, then a
  // draw of the run's seed: which of them stay is reproducible and changes from round to round.
  std::vector<const std::string*> idle;
  size_t training_here = 0;
  for (const auto& [id, rec] : registry_.records()) {
    if (!rec.via.empty()) continue;
    if (rec.busy)
      ++training_here;
    else
      idle.push_back(&rec.id);
  }
  const size_t keep = static_cast<size_t>(config_.pace_max_idle);
  if (idle.size() <= keep) return;
  Rng rng = Rng::Stream(config_.seed, {kPaceStream, round, static_cast<uint64_t>(attempt_)});
  rng.Shuffle(std::span<const std::string*>(idle));
  std::vector<std::string> away;
  for (size_t i = keep; i < idle.size(); ++i) away.push_back(*idle[i]);
  const uint64_t after = static_cast<uint64_t>(config_.pace_come_back.count());
  const uint64_t window = static_cast<uint64_t>(
      PaceWindow(config_, away.size(), training_here, pace_cycle_.cycle(config_.round_timeout))
          .count());
  for (const std::string& id : away) {
    outbox_.push_back(
        {id, Goodbye{fmt::format("pace steering: {} idle clients are more than "
                                 "pace.max_idle = {}; come back in {}-{} s",
                                 idle.size(), keep, after / 1000, (after + window) / 1000),
                     0, after, window}});
    registry_.Leave(id);  // gone from selection now; its connection closes after the Goodbye
  }
  Log().info("round {}: pace steering sent {} of {} idle clients away for {}-{} s", round,
             away.size(), idle.size(), after / 1000, (after + window) / 1000);
}

bool RoundEngine::ReleaseDp(TimePoint now) {
  Result<std::vector<float>> mean = dp_->Release(summary_.round, round_q_);
  Status s = mean.status();
  if (s.ok()) s = strategy_->CheckUpdate(UpdateStats{LInfNorm(*mean), mean->size()}, 1);
  if (s.ok())
    s = strategy_->Accumulate(
        1, [&](UpdateSink& sink, float scale) { sink.AddDense(0, *mean, scale); });
  if (!s.ok()) {
    FailAttempt(now, "differential privacy: " + s.message());
    return false;
  }
  summary_.dp = dp_->last_round();
  return true;
}

void RoundEngine::CloseRound(TimePoint now) {
  secagg_.reset();
  tier_secagg_.reset();
  if (dp_ && !ReleaseDp(now)) return;
  Result<ModelWeights> next = strategy_->Finalize();
  if (!next.ok()) {
    // E.g. a robust rule given fewer updates than it needs: the attempt fails and is retried.
    FailAttempt(now, "the strategy could not aggregate: " + next.status().message());
    return;
  }
  if (std::string where = FirstNonFinite(*next); !where.empty()) {
    // Updates are checked finite, so only an overflow gets here; every later round would train
    // from it. The run stops rather than send it.
    in_round_ = false;
    registry_.ReleaseAll();
    failed_ = true;
    failure_ = Status::FailedPrecondition(fmt::format(
        "round {}: the aggregated model holds {}; the run stops rather than send it to clients",
        rounds_done_ + 1, where));
    Log().error("{}", failure_.message());
    return;
  }
  model_ = std::move(next).value();
  ++version_;
  ++rounds_done_;
  registry_.SetRound(rounds_done_ + 1);
  in_round_ = false;
  attempt_ = 0;
  summary_.model_version = version_;
  summary_.duration_s = SecondsBetween(round_start_, now);
  for (const auto& [k, v] : metric_sums_)
    summary_.client_metrics[k] =
        v / static_cast<double>(std::max<uint64_t>(1, summary_.num_examples));
  registry_.ReleaseAll();
  if (config_.federated_eval_every > 0 &&
      rounds_done_ % static_cast<uint64_t>(config_.federated_eval_every) == 0) {
    EvaluateTask task;
    task.round = summary_.round;
    task.model_version = version_;
    task.deadline_ms = static_cast<uint64_t>(config_.round_timeout.count());
    task.model = download_->For(model_, version_, summary_.round);  // shared by every client's
    eval_->Start(task, registry_.Eligible(), now + config_.round_timeout, outbox_,
                 [this](const std::string& id, EvaluateTask& t) {
                   StampFrozen(config_, *registry_.Find(id), t.frozen);
                 });
  }
  if (hooks_.on_round_complete) hooks_.on_round_complete(summary_, model_);
}

void RoundEngine::FailAttempt(TimePoint, const std::string& reason) {
  const uint64_t round = rounds_done_ + 1;
  in_round_ = false;
  secagg_.reset();
  tier_secagg_.reset();
  assigned_.clear();
  registry_.ReleaseAll();
  ++attempt_;
  if (hooks_.on_round_failed) hooks_.on_round_failed(round, attempt_, reason);
  // Attempts whose every update was refused for one and the same reason: retrying with other
  // clients does not help when the cause is the run itself (a model every client's update turns
  // non-finite, a bound nobody meets). kSameRefusalLimit such attempts in a row end the run.
  // Only assigned clients' updates judged in this attempt count (Reject), and the streak must
  // span kSameRefusalClients different clients: one client refused again and again is that
  // client's failure (it cools down), not the run's.
  const bool refused_alike =
      summary_.accepted == 0 && !attempt_refused_clients_.empty() && attempt_refusals_.size() == 1;
  if (!refused_alike) {
    same_refusal_kind_.clear();
    same_refusals_ = 0;
    same_refusal_clients_.clear();
  } else if (*attempt_refusals_.begin() == same_refusal_kind_) {
    ++same_refusals_;
    same_refusal_clients_.insert(attempt_refused_clients_.begin(), attempt_refused_clients_.end());
  } else {
    same_refusal_kind_ = *attempt_refusals_.begin();
    same_refusals_ = 1;
    same_refusal_clients_ = attempt_refused_clients_;
  }
  if (same_refusals_ >= kSameRefusalLimit && same_refusal_clients_.size() >= kSameRefusalClients) {
    failed_ = true;
    failure_ = Status::FailedPrecondition(fmt::format(
        "round {}: every update of the last {} attempts was refused for the same reason ({}), "
        "from {} different clients, e.g. '{}'; retrying cannot help",
        round, same_refusals_, same_refusal_kind_, same_refusal_clients_.size(),
        attempt_refusal_example_));
    return;
  }
  if (config_.max_round_attempts > 0 && attempt_ >= config_.max_round_attempts) {
    failed_ = true;
    failure_ = Status::Unavailable("round " + std::to_string(round) + " failed " +
                                   std::to_string(attempt_) + " attempts; last: " + reason);
  }
}

bool RoundEngine::StartSecAgg(const std::vector<std::string>& selected, uint64_t round,
                              TimePoint now) {
  // Differential privacy on the clients: weight 1 each, and each adds 1/M of the noise's variance,
  // where M is the fewest masked inputs the round may close with (AfterSecAgg), so the sum the
  // coordinator unmasks always holds at least the full noise.
  Result<SecAggRound::Options> o = SecAggOptionsFor(config_, registry_, selected, model_, round,
                                                    /*unit_weights=*/dp_ != nullptr);
  Result<std::unique_ptr<SecAggRound>> r = o.status();
  if (o.ok()) {
    if (dp_) {
      const double fewest = static_cast<double>(DpFewestInputs());
      o->dp_clip_norm = dp_->clip_norm();
      o->dp_noise_stddev = config_.dp.noise_multiplier * dp_->clip_norm() / std::sqrt(fewest);
      o->dp_noise_seed = config_.dp.noise_seed == 0
                             ? 0
                             : DeriveSeed(config_.dp.noise_seed, {round, attempt_ + 1ull});
    }
    // Clients behind aggregators: one session per aggregator's group, run there with the same
    // options; the clients connected here are the group "" (docs/tier.md).
    std::map<std::string, std::vector<std::string>> groups;
    for (const std::string& id : selected) {
      const ClientRecord* rec = registry_.Find(id);
      groups[rec ? rec->via : std::string()].push_back(id);
    }
    if (groups.size() > 1 || !groups.begin()->first.empty()) {
      o->decode = false;
      // Every group's session closes its masked input at the deadline and unmasks within a phase
      // timeout; its aggregator then sends the sum.
      const TimePoint wait_until = deadline_ + 2 * o->phase_timeout;
      const size_t fewest = static_cast<size_t>(dp_ ? DpFewestInputs() : 1);
      Result<std::unique_ptr<TierSecAgg>> t = TierSecAgg::Start(
          *o, groups, wait_until, std::max<size_t>(fewest, config_.secagg.min_clients));
      if (!t.ok()) {
        r = t.status();
      } else {
        tier_secagg_ = std::move(*t);
        for (const auto& [via, members] : groups)
          if (!via.empty())
            for (const std::string& id : members)
              outbox_.push_back({id, tier_secagg_->start_message()});
        auto direct = groups.find("");
        if (direct == groups.end()) return true;
        r = SecAggRound::Start(std::move(*o), direct->second, now, deadline_);
      }
    } else {
      r = SecAggRound::Start(std::move(*o), selected, now, deadline_);
    }
  }
  if (!r.ok()) {
    in_round_ = false;
    registry_.ReleaseAll();
    failed_ = true;
    failure_ = r.status().WithContext("round " + std::to_string(round) + ": secure aggregation");
    Log().error("{}", failure_.ToString());
    return false;
  }
  secagg_ = std::move(*r);
  for (SecAggRound::Outgoing& o2 : secagg_->TakeOutbox())
    outbox_.push_back({o2.client_id, std::move(o2.message)});
  return true;
}

Status RoundEngine::OnSecAgg(const std::string& id, const Message& m, TimePoint now) {
  registry_.Touch(id, now);
  if (!secagg_)
    return Status::FailedPrecondition("no round with secure aggregation is in progress");
  Status s = FeedSecAgg(*secagg_, id, m, now);
  if (!s.ok()) {
    outbox_.push_back(
        {id, Error{static_cast<uint32_t>(ErrorCode::kProtocolViolation), s.message()}});
    if (in_round_) ++summary_.refused;
  }
  AfterSecAgg(now);
  return s;
}

void RoundEngine::AfterSecAgg(TimePoint now) {
  if (!secagg_) return;
  for (SecAggRound::Outgoing& o : secagg_->TakeOutbox())
    outbox_.push_back({o.client_id, std::move(o.message)});
  // The clients that went silent in a phase cool down, once the session is over, as a client
  // silent in a plaintext round does; those that left do not (a departure is no miss here either).
  if (secagg_->state() != SecAggRound::State::kRunning) {
    for (const SecAggRound::Silent& s : secagg_->TakeSilent())
      if (registry_.Find(s.client_id))
        Miss(s.client_id,
             fmt::format("sent nothing in phase '{}' of the secure aggregation", s.phase), false);
  }
  if (tier_secagg_) {  // the clients connected here are one group of the tier's round
    if (secagg_->state() == SecAggRound::State::kFailed)
      tier_secagg_->OnGroupFailed("", secagg_->failure().message());
    else if (secagg_->state() == SecAggRound::State::kDone)
      tier_secagg_->OnGroupSum("", secagg_->sum(), secagg_->survivors());
    AfterTierSecAgg(now);
    return;
  }
  if (secagg_->state() == SecAggRound::State::kFailed) {
    const std::string reason = secagg_->failure().message();
    FailAttempt(now, reason);
    MaybeStartRound(now);
    return;
  }
  if (secagg_->state() != SecAggRound::State::kDone) return;
  // The mean of the survivors' updates, folded once with their total weight: FedAvg and the
  // server optimizers need only that.
  const std::vector<float>& mean = secagg_->mean();
  summary_.accepted = static_cast<int64_t>(secagg_->survivors().size());
  summary_.num_examples = secagg_->total_weight();
  summary_.bytes_up += secagg_->masked_bytes_up() + secagg_->protocol_bytes_up();
  summary_.bytes_down += secagg_->protocol_bytes_down();
  FoldSecureMean(mean, SecAggMeanWriter(*secagg_, model_.size()), secagg_->total_weight(),
                 summary_.accepted, now);
}

void RoundEngine::AfterTierSecAgg(TimePoint now) {
  if (!in_round_ || !tier_secagg_ || !tier_secagg_->complete(now)) return;
  if (secagg_ && secagg_->state() == SecAggRound::State::kRunning)
    tier_secagg_->OnGroupFailed("", std::string("its session was still in phase '") +
                                        secagg_->phase_name() + "' when the wait ended");
  Result<TierSecAgg::Total> total = tier_secagg_->Finish();
  if (!total.ok()) {
    FailAttempt(now, total.status().message());
    MaybeStartRound(now);
    return;
  }
  summary_.accepted = static_cast<int64_t>(total->survivors);
  summary_.num_examples = total->total_weight;
  if (secagg_) {
    summary_.bytes_up += secagg_->masked_bytes_up() + secagg_->protocol_bytes_up();
    summary_.bytes_down += secagg_->protocol_bytes_down();
  }
  // The writer reads the tier's session and the mean: keep both alive until the fold is done.
  const std::unique_ptr<TierSecAgg> tier = std::move(tier_secagg_);
  tier_secagg_ = nullptr;
  FoldSecureMean(total->mean, SecAggMeanWriter(tier->session(), total->mean, model_.size()),
                 total->total_weight, summary_.accepted, now);
}

void RoundEngine::FoldSecureMean(const std::vector<float>& mean, const UpdateWriter& write_mean,
                                 uint64_t weight, int64_t survivors, TimePoint now) {
  Status s = Status::Ok();
  if (dp_) {
    // Each survivor added 1/M of the noise's variance: fewer than M would leave less than the
    // whole noise in the sum, so the attempt fails instead of releasing it.
    if (survivors < DpFewestInputs()) {
      FailAttempt(now, fmt::format("differential privacy: {} masked inputs arrived, fewer than the "
                                   "{} whose noise adds up to the full noise",
                                   survivors, DpFewestInputs()));
      MaybeStartRound(now);
      return;
    }
    std::vector<float> dense(model_.size(), 0.0f);
    BufferSink sink(dense);
    write_mean(sink, 1.0f);
    s = dp_->AddNoisedSum(dense, weight);
  } else {
    // The integer total weight, exact in the terms and the normaliser (weighted_mean.h).
    s = strategy_->CheckUpdate(UpdateStats{LInfNorm(mean), mean.size()}, weight);
    if (s.ok()) s = strategy_->Accumulate(weight, write_mean);
  }
  if (!s.ok()) {
    FailAttempt(now, "secure aggregation: the strategy refused the aggregate: " + s.message());
  } else {
    CloseRound(now);
  }
  MaybeStartRound(now);
}

std::vector<RoundEngine::Outgoing> RoundEngine::TakeOutbox() {
  std::vector<Outgoing> out;
  out.swap(outbox_);
  return out;
}

std::optional<TimePoint> RoundEngine::next_wakeup() const {
  std::optional<TimePoint> wake;
  if (in_round_) {
    if (secagg_)
      wake = secagg_->next_deadline();
    else if (!tier_secagg_)
      wake = deadline_;
    if (tier_secagg_ && (!wake || tier_secagg_->wait_until() < *wake))
      wake = tier_secagg_->wait_until();
  }
  if (std::optional<TimePoint> e = eval_->deadline(); e && (!wake || *e < *wake)) wake = e;
  return wake;
}

}  // namespace tributary
