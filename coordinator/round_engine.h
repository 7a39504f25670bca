// RoundEngine: the synchronous RunEngine (run_engine.h): the coordinator's rounds as a state
// machine.
//
// It is fed events — a client joined or left, an update or evaluation result arrived, time passed
// (OnTick) — and queues messages for clients, which the driver (the TLS server, the simulator, a
// test) takes with TakeOutbox() and delivers. One engine, three ways to run it.
//
// A round: when at least min_available clients are idle, the engine selects
// ceil(K * over_selection) of them with an RNG seeded by (seed, round, attempt), sends each a
// TaskAssignment (its task_id the attempt's number, from 1), and waits. Each UpdateSubmission is
// validated (assigned, not late, not an answer to a failed attempt's task (refused as late: it
// costs its sender nothing more, and a task it holds in this attempt stays open), not a
// duplicate, current model version, matching layout and codec, num_examples in bounds, finite
// values within range) and folded into the strategy at once; a refused update gets an Error
// message naming the reason and changes nothing; a late one for an earlier round (a slow client's,
// after its round closed) is refused and reported with its own round, and counts in none of the
// open round's numbers. The round closes when K updates are in, or at the
// deadline (or when every selected client has answered, left or reported its task failed:
// TaskFailed) with at least min_completed;
// otherwise the attempt fails and the round is retried with a fresh selection, up to
// max_round_attempts; three failed attempts in a row whose every update was refused for the same
// kind of reason, from at least two different clients, end the run at once (naming it), as does an
// aggregated model that is not finite. Only the verdicts on updates of clients assigned to the
// attempt count there: late, early, duplicate and unassigned updates are refused but count in no
// streak, so one client's misbehaviour cannot end the run. A lone client's refusals never do (the
// run then ends only by max_round_attempts).
//
// Selection learns (ClientRegistry::RecordMiss): a client selected that sends no valid update by
// the deadline (silent, late, or refused; with secure aggregation, silent in a phase at its
// deadline: SecAggRound::TakeSilent), or that sends an update for a round not yet open or
// one it was not assigned, sits out the rest of the round's attempts and the next 1, 2, 4, ...
// rounds (consecutive misses, capped at run.cooldown_max_rounds), with a warning naming it. After
// that it is on probation until its next accepted update clears its record: it fills what the
// clients with a clean record cannot, and beyond that at most a tenth of the selection (at least
// one) rides along over the target, so a round closes at its K clean clients' pace without waiting
// for it. When even that leaves fewer than a round needs to start (min_available, min_completed),
// cooling clients fill the selection, the earliest to come back first, rather than the run stall;
// a client refused in this very round is not one of them when it is the only client refused in it
// (so a lone refused client waits for others instead of burning the round's attempts). Under
// dp.sampling = "poisson" cooling clients are simply not in the sample. The cool-down is not
// checkpointed: a resumed run starts with none (its clients reconnect anew), so a silent client
// costs a resumed run one more miss. Selection stays a function of (seed, round, attempt) and the
// registry's state, so a simulated run is reproducible for its seed; with no miss on record it
// draws exactly what it drew before selection learned.
//
// Pace steering (pace.max_idle > 0; docs/tier.md): once a round's tasks are out, the idle clients
// connected to the coordinator itself beyond pace.max_idle, drawn by (seed, round, attempt), get a
// Goodbye that tells them to come back at a time each draws in [pace.come_back_s, + pace.window_s]
// and leave the registry at once (so no later attempt selects them before their connection
// closes); they rejoin like new connections. Clients behind aggregators are paced by their
// aggregator (AggregatorService), not here.
//
// Closing finalizes the strategy, bumps the model version and calls on_round_complete
// (checkpoint, evaluation, metrics) before the next round starts. A federated evaluation (every
// federated_eval_every rounds) sends the new model to every idle client; it is reported when all
// have answered or left, or at its deadline (round_timeout) with the results that came, and the run
// is not finished before the last round's evaluation is reported.
//
// Memory: a round copies the model once; every client's TaskAssignment (and every EvaluateTask of
// a federated evaluation) shares that copy (ModelPayload holds SharedFloats), so the outbox costs
// O(model + clients), not O(model x clients). Per-client fields (fit.seed) are per message. With a
// download codec that is not raw floats (e.g. "q8") the one copy is the encoded model
// (SharedBytes), encoded once per round with the codec's stochastic rounding seeded by (seed,
// round, model version); a model the codec refuses (a non-finite weight) is sent raw instead, with
// a warning.
//
// Not thread-safe: call every method from one strand. Time comes from the caller (`now`), so tests
// and the simulator drive deadlines without sleeping.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "aggregation/strategy.h"
#include "compression/codec.h"
#include "coordinator/client_registry.h"
#include "coordinator/download_cache.h"
#include "coordinator/federated_eval.h"
#include "coordinator/pace_window.h"
#include "coordinator/round_config.h"
#include "coordinator/run_engine.h"
#include "coordinator/secagg_round.h"
#include "coordinator/tier_secagg.h"
#include "privacy/dp/dp_aggregator.h"
#include "protocol/messages.h"

namespace tributary {

class RoundEngine : public RunEngine {
 public:
  // `rounds_done`, `model_version` and `dispatches` restore a checkpoint; a fresh run passes 0.
  static Result<std::unique_ptr<RoundEngine>> Create(RoundConfig config,
                                                     std::unique_ptr<Strategy> strategy,
                                                     ModelWeights initial, uint64_t rounds_done = 0,
                                                     uint64_t model_version = 0, Hooks hooks = {},
                                                     uint64_t dispatches = 0);

  void OnJoined(const std::string& id, const ClientCapabilities& caps, TimePoint now,
                const std::string& via = {}) override;
  void OnLeft(const std::string& id, TimePoint now) override;
  Status OnUpdate(const std::string& id, const UpdateSubmission& update, TimePoint now) override;
  Status OnEvaluateResult(const std::string& id, const EvaluateResult& result,
                          TimePoint now) override;
  // A secure aggregation message (types 10-16) from a client of this round (config.secagg).
  Status OnSecAgg(const std::string& id, const Message& message, TimePoint now) override;
  // The open attempt's task of `id` ends (run_engine.h); a round that now has every answer it
  // will get closes (or fails) at once, as when a selected client leaves.
  Status OnTaskFailed(const std::string& id, const TaskFailed& failed, TimePoint now) override;
  void OnHeartbeat(const std::string& id, TimePoint now) override { registry_.Touch(id, now); }
  // The tier's partial sum of the open round (run_engine.h). Accepted records count as accepted
  // updates (hooks, summary, metrics, cool-downs) and `partial` is merged into the strategy
  // (Strategy::MergePartialSum: bitwise what folding the updates here gives); refused records
  // count as refusals and misses, without an Error (the aggregator sent its client one).
  Status OnGroupResult(const std::string& aggregator, const GroupResult& result,
                       const PartialSum& partial, TimePoint now) override;
  // A group's secure sum of the open round (docs/tier.md): added to the other groups' and decoded
  // once every group is over (TierSecAgg).
  Status OnSecureGroupResult(const std::string& aggregator, const GroupResult& result,
                             TimePoint now) override;
  // Starts rounds and enforces deadlines.
  void OnTick(TimePoint now) override;

  std::vector<Outgoing> TakeOutbox() override;
  // The current round's deadline (or its secure aggregation phase's), or a federated
  // evaluation's, whichever comes first.
  std::optional<TimePoint> next_wakeup() const override;

  bool finished() const override {
    return ((rounds_done_ >= static_cast<uint64_t>(config_.rounds) || budget_spent_) &&
            !eval_->pending()) ||
           failed_;
  }
  bool budget_spent() const override { return budget_spent_; }
  const std::string& stop_reason() const override { return stop_reason_; }
  const DpAggregator* dp() const override { return dp_.get(); }
  DpAggregator* mutable_dp() override { return dp_.get(); }
  // Non-OK when the run stopped because a round failed max_round_attempts times (or for the
  // reasons above).
  const Status& failure() const override { return failure_; }
  uint64_t rounds_done() const override { return rounds_done_; }
  uint64_t model_version() const override { return version_; }
  const ModelWeights& model() const override { return model_; }
  const Strategy& strategy() const override { return *strategy_; }
  const ClientRegistry& registry() const override { return registry_; }
  ClientRegistry& mutable_registry() override { return registry_; }
  bool round_in_progress() const override { return in_round_; }
  const RoundConfig& config() const override { return config_; }
  uint64_t dispatches() const override { return dispatches_; }

 private:
  RoundEngine() = default;
  void MaybeStartRound(TimePoint now);
  void CloseRound(TimePoint now);
  void FailAttempt(TimePoint now, const std::string& reason);
  void MaybeFinishEarly(TimePoint now);
  // `kind` groups reasons ("late", "size", "invalid values", ...) for the same-refusal check.
  // `round` is the one the refusal is charged to (the open one, or a late update's own); it counts
  // in the attempt only when that is the open one.
  Status Reject(const std::string& id, uint64_t round, ErrorCode code, std::string_view kind,
                const std::string& reason);
  int64_t TargetUpdates() const;  // K; with run.fraction, fixed at the attempt's start
  bool PoissonSampling() const;   // dp.sampling = "poisson"
  // Differential privacy on the clients: the fewest masked inputs a round may close with (M), each
  // client adding 1/M of the noise's variance.
  int64_t DpFewestInputs() const;
  // Picks this attempt's clients from the idle ones: K of them (shuffled, fixed-size), or each
  // with probability K / dp.population (dp.sampling = "poisson"). Sets round_q_.
  std::vector<std::string> Select(uint64_t round);
  // Reject without the Error to the client: the refusal counted (summary, same-refusal streak)
  // and reported (on_refused). The tier's refused records come here: their aggregator told the
  // client.
  Status Charge(const std::string& id, uint64_t round, ErrorCode code, std::string_view kind,
                const std::string& reason);
  // An accepted update's bookkeeping (summary, metrics, registry, on_accepted), for OnUpdate and
  // the tier's records (`via`: the aggregator's id).
  void CountAccepted(const std::string& id, uint64_t round, uint64_t num_examples, uint64_t bytes,
                     const WireMetrics& metrics, const std::string& via = std::string());
  // Folds the round's aggregate into the strategy through the DP mechanism: false (the attempt
  // failed) when the mechanism or strategy refused it.
  bool ReleaseDp(TimePoint now);
  int64_t MinCompleted() const;  // config.min_completed, or every target update when it is 0
  // Starts this attempt's secure aggregation over `selected`; false when the run cannot go on.
  bool StartSecAgg(const std::vector<std::string>& selected, uint64_t round, TimePoint now);
  // Moves the secure aggregation round's messages out, and closes or fails the attempt when it
  // is over.
  void AfterSecAgg(TimePoint now);
  // Through the tier: once every group is over (or the wait ended), folds the summed groups' mean
  // or fails the attempt.
  void AfterTierSecAgg(TimePoint now);
  // Folds secure aggregation's weighted mean of `survivors` inputs (total weight `weight`) and
  // closes the round, or fails the attempt.
  void FoldSecureMean(const std::vector<float>& mean, const UpdateWriter& write_mean,
                      uint64_t weight, int64_t survivors, TimePoint now);
  // Pace steering (config.pace_max_idle): tells the idle clients connected here beyond the cap to
  // come back later (a Goodbye with a window, PaceWindow) and takes them out of the registry.
  void PaceIdle(uint64_t round, TimePoint now);
  bool SecureRound() const { return secagg_ != nullptr || tier_secagg_ != nullptr; }

  RoundConfig config_;
  std::unique_ptr<Strategy> strategy_;
  std::unique_ptr<Codec> codec_;
  std::unique_ptr<DownloadCache> download_;  // the current model as clients receive it
  ModelWeights model_;
  Hooks hooks_;
  ClientRegistry registry_;
  uint64_t rounds_done_ = 0;
  uint64_t version_ = 0;
  bool failed_ = false;
  Status failure_;
  // Consecutive failed attempts whose every update was refused for the same kind of reason.
  static constexpr int64_t kSameRefusalLimit = 3;
  std::set<std::string, std::less<>> attempt_refusals_;  // kinds refused in this attempt
  std::string attempt_refusal_example_;                  // the first such reason, verbatim
  std::string same_refusal_kind_;
  int64_t same_refusals_ = 0;
  // The streak must span this many different clients: one client's refusals never end the run.
  static constexpr size_t kSameRefusalClients = 2;
  std::set<std::string> attempt_refused_clients_;  // assigned clients refused in this attempt
  std::set<std::string> same_refusal_clients_;     // ... in the streak's attempts
  bool judging_ = false;  // inside OnUpdate's verdict on an assigned client's update
  // A miss by `id` in the open round (the cool-down), with a warning saying why.
  void Miss(const std::string& id, std::string_view why, bool refused);
  // A selected client's task failed (TaskFailed, directly or through an aggregator): dropped, and
  // a miss.
  void CountFailedTask(const std::string& id);

  // The current round attempt.
  bool in_round_ = false;
  int64_t attempt_target_ = 0;  // run.fraction's K for the attempt in progress
  int64_t attempt_ = 0;
  // The (round, attempt) whose wait for idle clients was last logged: once per attempt, so that a
  // run waiting for clients says so (it printed nothing), but a fleet joining is not a line each.
  std::optional<std::pair<uint64_t, int64_t>> wait_logged_;
  uint64_t first_round_ = 1;  // the first round this engine runs (after a resume's restored ones)
  // The task id of this attempt's tasks (TaskAssignment::task_id): the attempt's number, from 1.
  uint64_t AttemptTaskId() const { return static_cast<uint64_t>(attempt_) + 1; }
  TimePoint round_start_{}, deadline_{};
  std::set<std::string> assigned_;  // selected and not yet answered
  std::set<std::string> answered_;  // submitted (accepted or refused) or dropped
  RoundSummary summary_;
  std::map<std::string, double> metric_sums_;

  // The federated evaluation in flight: reported when every result is in, or at its deadline
  // (round_timeout after it was sent) with what came.
  std::unique_ptr<FederatedEval> eval_;
  uint64_t dispatches_ = 0;  // assignments sent since the start (the checkpoint's, when resumed)
  RoundCycle pace_cycle_;    // pace steering's measure of the rounds' pace

  // This attempt's secure aggregation (config.secagg.enabled): the session of the clients
  // connected here, and, when some selected clients are behind aggregators, the groups' sums.
  std::unique_ptr<SecAggRound> secagg_;
  std::unique_ptr<TierSecAgg> tier_secagg_;

  std::unique_ptr<DpAggregator> dp_;  // with config.dp.enabled
  double round_q_ = 0.0;              // this attempt's sampling rate, charged when it closes
  bool budget_spent_ = false;
  std::string stop_reason_;

  std::vector<Outgoing> outbox_;
};

}  // namespace tributary
