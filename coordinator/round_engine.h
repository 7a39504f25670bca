// RoundEngine: the coordinator's round logic as a state machine, knowing nothing of sockets.
//
// It is fed events — a client joined or left, an update or evaluation result arrived, time passed
// (OnTick) — and queues messages for clients, which the driver (the TLS server, the simulator, a
// test) takes with TakeOutbox() and delivers. One engine, three ways to run it.
//
// A round: when at least min_available clients are idle, the engine selects
// ceil(K * over_selection) of them with an RNG seeded by (seed, round, attempt), sends each a
// TaskAssignment, and waits. Each UpdateSubmission is validated (assigned, not late, not a
// duplicate, current model version, matching layout and codec, num_examples in bounds, finite
// values within range) and folded into the strategy at once; a refused update gets an Error
// message naming the reason and changes nothing; a late one for an earlier round (a slow client's,
// after its round closed) is refused and reported with its own round, and counts in none of the
// open round's numbers. The round closes when K updates are in, or at the
// deadline (or when every selected client has answered or left) with at least min_completed;
// otherwise the attempt fails and the round is retried with a fresh selection, up to
// max_round_attempts; three failed attempts in a row whose every update was refused for the same
// kind of reason, from at least two different clients, end the run at once (naming it), as does an
// aggregated model that is not finite. Only the verdicts on updates of clients assigned to the
// attempt count there: late, early, duplicate and unassigned updates are refused but count in no
// streak, so one client's misbehaviour cannot end the run. A lone client's refusals never do (the
// run then ends only by max_round_attempts).
//
// Selection learns (ClientRegistry::RecordMiss): a client selected that sends no valid update by
// the deadline (silent, late, or refused), or that sends an update for a round not yet open or
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
#include "coordinator/round_config.h"
#include "coordinator/secagg_round.h"
#include "privacy/dp/dp_aggregator.h"
#include "protocol/messages.h"

namespace tributary {

struct RoundSummary {
  uint64_t round = 0;          // 1-based number of the round that closed
  uint64_t model_version = 0;  // the version produced by this round
  int64_t attempts = 0;        // 1 when the first attempt succeeded
  int64_t selected = 0;
  int64_t accepted = 0;     // updates folded in
  int64_t refused = 0;      // updates refused (late, duplicate, malformed, ...)
  int64_t dropped = 0;      // selected clients that left or never answered
  uint64_t bytes_down = 0;  // model payload bytes sent in this round's assignments
  uint64_t bytes_up = 0;    // encoded update bytes received
  uint64_t num_examples = 0;
  double duration_s = 0.0;
  Metrics client_metrics;           // num_examples-weighted mean of the clients' reported metrics
  std::optional<DpRoundReport> dp;  // with differential privacy: the clip, noise and epsilon
};

// A federated evaluation's outcome, weighted by each client's num_examples.
struct FederatedEvalSummary {
  uint64_t round = 0;
  int64_t clients = 0;
  uint64_t num_examples = 0;
  double loss = 0.0;
  double accuracy = 0.0;
};

class RoundEngine {
 public:
  struct Outgoing {
    std::string client_id;
    Message message;
  };
  struct Hooks {
    // After every closed round, with the new model. The driver checkpoints, evaluates and logs
    // here.
    std::function<void(const RoundSummary&, const ModelWeights&)> on_round_complete;
    // After a round attempt fails (too few updates); `reason` says why.
    std::function<void(uint64_t round, int64_t attempt, const std::string& reason)> on_round_failed;
    // When all results of a federated evaluation are in (or its round's deadline passed).
    std::function<void(const FederatedEvalSummary&)> on_federated_eval;
    // When a round attempt starts: its selection has been sent its tasks.
    std::function<void(uint64_t round, int64_t attempt, int64_t selected)> on_round_opened;
    // When an update is folded in.
    std::function<void(const std::string& client_id, uint64_t round, uint64_t num_examples,
                       uint64_t bytes)>
        on_accepted;
    // When an update is refused: who, for which round (the current one, except a late update for
    // an earlier round: that round, and it counts in no attempt of the current one), and why
    // (already sent to the client as an Error).
    std::function<void(const std::string& client_id, uint64_t round, const Status& why)> on_refused;
  };

  // `rounds_done` and `model_version` restore a checkpoint; a fresh run passes 0 and 0.
  static Result<std::unique_ptr<RoundEngine>> Create(RoundConfig config,
                                                     std::unique_ptr<Strategy> strategy,
                                                     ModelWeights initial, uint64_t rounds_done = 0,
                                                     uint64_t model_version = 0, Hooks hooks = {});

  void OnJoined(const std::string& id, const ClientCapabilities& caps, TimePoint now);
  void OnLeft(const std::string& id, TimePoint now);
  // OK when the update was folded in; otherwise why it was refused.
  Status OnUpdate(const std::string& id, const UpdateSubmission& update, TimePoint now);
  Status OnEvaluateResult(const std::string& id, const EvaluateResult& result, TimePoint now);
  // A secure aggregation message (types 10-16) from a client of this round (config.secagg).
  Status OnSecAgg(const std::string& id, const Message& message, TimePoint now);
  void OnHeartbeat(const std::string& id, TimePoint now) { registry_.Touch(id, now); }
  // Starts rounds and enforces deadlines. Call when next_wakeup() passes, and after other events.
  void OnTick(TimePoint now);

  std::vector<Outgoing> TakeOutbox();
  // When OnTick next needs to run (the current round's deadline, or a federated evaluation's), if
  // ever.
  std::optional<TimePoint> next_wakeup() const;

  // Every round is done and the last federated evaluation is in (or past its deadline), or a
  // round failed for good.
  bool finished() const {
    return ((rounds_done_ >= static_cast<uint64_t>(config_.rounds) || budget_spent_) &&
            eval_pending_.empty()) ||
           failed_;
  }
  // True when the run stopped before a round that would have spent more than dp.target_epsilon;
  // stop_reason() says so with the numbers. Such a run ends well: its model is final.
  bool budget_spent() const { return budget_spent_; }
  const std::string& stop_reason() const { return stop_reason_; }
  // The differential privacy mechanism and its accountant (config.dp.enabled), else null.
  const DpAggregator* dp() const { return dp_.get(); }
  DpAggregator* mutable_dp() { return dp_.get(); }
  // Non-OK when the run stopped because a round failed max_round_attempts times.
  const Status& failure() const { return failure_; }
  uint64_t rounds_done() const { return rounds_done_; }
  uint64_t model_version() const { return version_; }
  const ModelWeights& model() const { return model_; }
  const Strategy& strategy() const { return *strategy_; }
  Strategy& mutable_strategy() { return *strategy_; }
  const ClientRegistry& registry() const { return registry_; }
  bool round_in_progress() const { return in_round_; }
  const RoundConfig& config() const { return config_; }

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
  int64_t TargetUpdates() const;
  bool PoissonSampling() const;  // dp.sampling = "poisson"
  // Differential privacy on the clients: the fewest masked inputs a round may close with (M), each
  // client adding 1/M of the noise's variance.
  int64_t DpFewestInputs() const;
  // Picks this attempt's clients from the idle ones: K of them (shuffled, fixed-size), or each
  // with probability K / dp.population (dp.sampling = "poisson"). Sets round_q_.
  std::vector<std::string> Select(uint64_t round);
  // Folds the round's aggregate into the strategy through the DP mechanism: false (the attempt
  // failed) when the mechanism or strategy refused it.
  bool ReleaseDp(TimePoint now);
  int64_t MinCompleted() const;  // config.min_completed, or every target update when it is 0
  void FinishFederatedEval();
  // The current model as clients receive it: raw, or encoded with the download codec.
  ModelPayload DownloadPayload(uint64_t round) const;
  // Starts this attempt's secure aggregation over `selected`; false when the run cannot go on.
  bool StartSecAgg(const std::vector<std::string>& selected, uint64_t round, TimePoint now);
  // Moves the secure aggregation round's messages out, and closes or fails the attempt when it
  // is over.
  void AfterSecAgg(TimePoint now);

  RoundConfig config_;
  std::unique_ptr<Strategy> strategy_;
  std::unique_ptr<Codec> codec_;
  std::unique_ptr<Codec> download_codec_;
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

  // The current round attempt.
  bool in_round_ = false;
  int64_t attempt_ = 0;
  TimePoint round_start_{}, deadline_{};
  std::set<std::string> assigned_;  // selected and not yet answered
  std::set<std::string> answered_;  // submitted (accepted or refused) or dropped
  RoundSummary summary_;
  std::map<std::string, double> metric_sums_;

  // The federated evaluation in flight: reported when every result is in, or at its deadline
  // (round_timeout after it was sent) with what came.
  std::set<std::string> eval_pending_;
  TimePoint eval_deadline_{};
  FederatedEvalSummary eval_;
  double eval_loss_sum_ = 0.0, eval_correct_sum_ = 0.0;

  std::unique_ptr<SecAggRound> secagg_;  // this attempt's, with config.secagg.enabled

  std::unique_ptr<DpAggregator> dp_;  // with config.dp.enabled
  double round_q_ = 0.0;              // this attempt's sampling rate, charged when it closes
  bool budget_spent_ = false;
  std::string stop_reason_;

  std::vector<Outgoing> outbox_;
};

}  // namespace tributary
