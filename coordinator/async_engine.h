// AsyncEngine: buffered asynchronous aggregation (FedBuff: Nguyen et al., "Federated Learning with
// Buffered Asynchronous Aggregation", AISTATS 2022), the RunEngine (run_engine.h) of run.mode =
// "async".
//
// No round waits for its slowest client. At most C = run.concurrency clients hold a task at once;
// whenever one finishes, leaves, or passes its task's deadline, a newly sampled idle client takes
// its place at once. Every task carries the model version current when it was sent; an update
// computed against version v that arrives when the model is at version w has staleness t = w - v,
// and is refused ("stale") when t > run.max_staleness. Accepted updates are folded into the
// strategy's exact fixed-point sum as they arrive, the delta multiplied by the staleness weight
// s(t) (run.staleness_weight; staleness_weight.h) and the weight being num_examples, so that after
// K = run.buffer_size of them the step is sum(s(t_i) n_i delta_i) / sum(n_i) (FedBuff's rule; the
// normaliser does not cancel the discount out). Then the strategy finalizes (FedAvg's mean, or a
// server optimizer's step on it), the version increments, on_round_complete runs (the driver
// checkpoints and evaluates: a "round" there is a step), and the next buffer opens. Tasks in
// flight keep their versions. run.rounds counts steps.
//
// Strategies that stream (FedAvg, FedProx, the server optimizers) work; a rule that needs every
// update (median, Krum, norm clipping) is refused at Create with the reason.
//
// Secure aggregation (secagg.enabled): clients go out in cohorts of run.clients_per_round, each
// cohort dispatched together (when that many slots are free) with its own SecAggRound, whose
// number (the first member's dispatch number + 1; unique since the run started or resumed) is its
// session's round and
// its tasks' round tag. Plaintext updates are refused. When the session ends, its unmasked mean
// times its integer total weight is one contribution to the buffer, discounted by the cohort's
// one staleness; its survivors count towards K. A session that fails (too few clients in a phase)
// or whose sum is more than run.max_staleness behind gives nothing; its slots are refilled.
// Members silent in a phase at its deadline (SecAggRound::TakeSilent) cool down.
//
// Differential privacy (dp.enabled, dp.placement = "server", dp.sampling = "fixed"): each accepted
// update is decoded, discounted by s(t), clipped to C and summed with weight 1 (DpAggregator);
// a step releases (sum + N(0, (z C)^2)) / K and is charged to the accountant at sampling rate 1,
// without amplification: which clients contribute to a step depends on their speed, not on a
// uniform sample, so no sampling rate can be claimed. A client contributes at most one update to
// a step (it is not sent a task again until the step is taken, and a second update is refused),
// so one client changes a step's sum by at most 2C (replace-one, the accountant's fixed-size
// adjacency). dp.target_epsilon stops the run before the step that would pass it.
//
// Selection: each time slots are free, the engine draws that many idle clients uniformly, with an
// RNG keyed by (run.seed, dispatch counter) over the registry's pools (clients with a clean record
// first, then those on probation; cooling clients only when nothing else is idle and no task is in
// flight), so a run is reproducible for its seed and event order. Nothing is dispatched before
// run.min_available clients have joined. Each task's fit seed is keyed by its dispatch counter and
// the client, its deadline is run.round_timeout after it was sent.
//
// Validation: the sender must hold a task, and the update must be for it (the task's round tag,
// task id, which is the dispatch counter + 1, and model version; an answer to a task the client
// held before, whose deadline passed, is refused as late and leaves its current task open); then
// the task's deadline, the staleness bound and the content checks every engine makes
// (update_check.h). A refused update gets an Error naming the reason. A client whose task passes
// its deadline, or whose update is refused (stale ones aside: their only fault is speed), cools
// down as in the synchronous engine, counted in steps (ClientRegistry::RecordMiss).
//
// The run fails (failure()) when an aggregated model is not finite, when 3 K judged updates in a
// row are refused for one kind of reason from at least two clients, or when run.max_round_attempts
// x C tasks in a row end without an accepted update (clients that never deliver).
//
// Crash and resume: the checkpoint after a step holds the model, the strategy's state, the step
// count and the dispatch counter. The open buffer and the tasks in flight are not saved: a resumed
// engine opens an empty buffer and dispatches anew from the saved counter, so the numbers (fit
// seeds, cohort sessions) of tasks sent between that checkpoint and the crash are issued again,
// to the tasks that replace them (as a run going on from the checkpoint would issue them; the
// lost tasks are gone, and a new session has fresh keys). A client's update for a task of before
// the crash is refused as one it does not hold (the client runtime drops results of a lost
// connection anyway).
//
// Memory: O(model) for the sum, one shared payload per model version (download_cache.h), and
// O(C) for the tasks.
//
// Not thread-safe: call every method from one strand.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/download_cache.h"
#include "coordinator/federated_eval.h"
#include "coordinator/run_engine.h"
#include "coordinator/secagg_round.h"
#include "coordinator/staleness_weight.h"

namespace tributary {

class AsyncEngine : public RunEngine {
 public:
  // `steps_done`, `model_version` and `dispatches` restore a checkpoint; a fresh run passes 0.
  // InvalidArgument for a bad config or a strategy that needs every update.
  static Result<std::unique_ptr<AsyncEngine>> Create(RoundConfig config,
                                                     std::unique_ptr<Strategy> strategy,
                                                     ModelWeights initial, uint64_t steps_done = 0,
                                                     uint64_t model_version = 0, Hooks hooks = {},
                                                     uint64_t dispatches = 0);

  void OnJoined(const std::string& id, const ClientCapabilities& caps, TimePoint now,
                const std::string& via = {}) override;
  void OnLeft(const std::string& id, TimePoint now) override;
  Status OnUpdate(const std::string& id, const UpdateSubmission& update, TimePoint now) override;
  Status OnEvaluateResult(const std::string& id, const EvaluateResult& result,
                          TimePoint now) override;
  // A secure aggregation message for the sender's cohort; FailedPrecondition (and an Error to the
  // client) when it is in none.
  Status OnSecAgg(const std::string& id, const Message& message, TimePoint now) override;
  // The client's task ends without an update (run_engine.h) and its slot goes to another client
  // at once; it counts towards the run's missed tasks (max_round_attempts x concurrency).
  Status OnTaskFailed(const std::string& id, const TaskFailed& failed, TimePoint now) override;
  // Asynchronous steps do not run through the aggregation tier (WhyNotThroughTier): refused.
  Status OnGroupResult(const std::string& aggregator, const GroupResult& result,
                       const PartialSum& partial, TimePoint now) override;
  Status OnSecureGroupResult(const std::string& aggregator, const GroupResult& result,
                             TimePoint now) override;
  void OnHeartbeat(const std::string& id, TimePoint now) override { registry_.Touch(id, now); }
  // Ends the tasks whose deadline passed and fills the free slots.
  void OnTick(TimePoint now) override;

  std::vector<Outgoing> TakeOutbox() override;
  // The earliest task deadline, or the federated evaluation's.
  std::optional<TimePoint> next_wakeup() const override;

  bool finished() const override {
    return ((steps_done_ >= static_cast<uint64_t>(config_.rounds) || budget_spent_) &&
            !eval_->pending()) ||
           failed_;
  }
  const Status& failure() const override { return failure_; }
  bool budget_spent() const override { return budget_spent_; }
  const std::string& stop_reason() const override { return stop_reason_; }
  const DpAggregator* dp() const override { return dp_.get(); }
  DpAggregator* mutable_dp() override { return dp_.get(); }
  uint64_t rounds_done() const override { return steps_done_; }
  uint64_t model_version() const override { return version_; }
  const ModelWeights& model() const override { return model_; }
  const Strategy& strategy() const override { return *strategy_; }
  const ClientRegistry& registry() const override { return registry_; }
  ClientRegistry& mutable_registry() override { return registry_; }
  const RoundConfig& config() const override { return config_; }
  bool round_in_progress() const override { return !tasks_.empty(); }
  uint64_t dispatches() const override { return dispatches_; }
  // Clients holding a task now.
  size_t in_flight() const { return tasks_.size(); }

 private:
  struct Task {
    uint64_t dispatch = 0;  // the dispatch counter when it was sent
    uint64_t round = 0;     // the step it was sent in (its TaskAssignment's round)
    uint64_t version = 0;   // the model version it carries
    TimePoint deadline{};
    uint64_t cohort = 0;  // its secure aggregation cohort's number; 0: none
  };
  // Clients dispatched together with secure aggregation: their session, and the version they got.
  struct Cohort {
    std::unique_ptr<SecAggRound> session;
    uint64_t version = 0;
    size_t size = 0;
  };

  AsyncEngine() = default;
  // Sends tasks to idle clients until C are in flight (or none is idle).
  void Fill(TimePoint now);
  // Up to `want` idle clients, drawn for the next dispatch (clean records first, then those on
  // probation; one cooling client when `cooling_fill` and nobody else is idle).
  std::vector<std::string> Draw(size_t want, bool cooling_fill);
  // `cohort`: the client's secure aggregation cohort (its tasks carry its number), 0 for none.
  void Dispatch(const std::string& id, const ModelPayload& payload, TimePoint now, uint64_t cohort);
  // Secure aggregation: a session over `members`, and their tasks.
  void StartCohort(const std::vector<std::string>& members, TimePoint now);
  // Moves the cohort's messages out; once its session is over, folds its sum (or counts its
  // loss) and ends its tasks.
  void AfterCohort(uint64_t id, TimePoint now);
  // `id` left or reconnected: its task is over (in a cohort, its session counts a dropout).
  void LeaveTask(const std::string& id, TimePoint now);
  // Removes `id`'s task (it is over); the client is idle again when still registered.
  void EndTask(std::map<std::string, Task>::iterator it);
  void Expire(TimePoint now);
  // Opens the next step's buffer (the strategy begins from the current model).
  void OpenBuffer(TimePoint now);
  // Whether the run takes another step: false once it failed, took its last step or spent its
  // privacy budget. When true the buffer is open (opened now if it was not), so an update or a
  // cohort's sum joins the step being built, never one already applied. WhyNoMoreSteps is the
  // refusal's text when false.
  bool TakesAnotherStep(TimePoint now);
  std::string WhyNoMoreSteps() const;
  void ApplyBuffer(TimePoint now);
  void Fail(Status why);
  // The judged refusal's part in the same-refusal streak and the no-progress count; `kind` ""
  // for one that counts in neither.
  void CountRefusal(const std::string& id, const std::string& kind, const std::string& reason);
  void CountMissedTask();
  Status Reject(const std::string& id, ErrorCode code, const std::string& reason);
  void Miss(const std::string& id, std::string_view why, bool refused);

  RoundConfig config_;
  std::unique_ptr<Strategy> strategy_;
  std::unique_ptr<Codec> codec_;
  std::unique_ptr<DownloadCache> download_;
  std::unique_ptr<FederatedEval> eval_;
  StalenessWeight weight_;
  ModelWeights model_;
  Hooks hooks_;
  ClientRegistry registry_;
  uint64_t steps_done_ = 0;
  uint64_t version_ = 0;
  uint64_t dispatches_ = 0;
  bool started_ = false;  // min_available clients joined once: dispatching has begun
  bool failed_ = false;
  Status failure_;
  std::string stop_reason_;
  std::unique_ptr<DpAggregator> dp_;  // with dp.enabled (server placement)
  bool budget_spent_ = false;

  std::map<std::string, Task> tasks_;                      // by client
  std::map<uint64_t, Cohort> cohorts_;                     // by number (secagg.enabled)
  std::set<std::pair<TimePoint, std::string>> deadlines_;  // the tasks', earliest first
  std::set<std::string> expired_;  // clients whose last task passed its deadline

  // The open buffer.
  bool buffer_open_ = false;
  int64_t buffered_ = 0;               // updates accepted into it
  std::set<std::string> contributed_;  // their clients (differential privacy: once per step)
  TimePoint step_start_{};
  RoundSummary summary_;
  std::map<std::string, double> metric_sums_;
  std::vector<uint64_t> histogram_;
  static constexpr int64_t kHistogramTop = 64;  // the histogram's last bucket: this and more
  double staleness_sum_ = 0.0;
  uint64_t step_max_staleness_ = 0;

  // Judged refusals of one kind in a row (no update accepted between), and from whom.
  static constexpr int64_t kSameRefusalSteps = 3;  // x K refusals end the run
  std::string same_kind_, same_example_;
  int64_t same_count_ = 0;
  std::set<std::string> same_clients_;
  int64_t missed_tasks_ = 0;  // tasks ended without an accepted update since the last one

  std::vector<Outgoing> outbox_;
};

}  // namespace tributary
